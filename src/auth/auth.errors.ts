import { defineDomainErrors, ErrorKind } from '../common/domain-error';

export enum AuthErrorCode {
  InvalidCredentials = 'invalid_credentials',
  TokenExpired = 'token_expired',
  TooManyLoginAttempts = 'too_many_login_attempts',
  /** Signup is off (ALLOW_SIGNUP=false): the route answers as if it did not exist. */
  SignupDisabled = 'not_found',
}

export class AuthError extends defineDomainErrors('auth', {
  [AuthErrorCode.InvalidCredentials]: ErrorKind.Unauthenticated,
  [AuthErrorCode.TokenExpired]: ErrorKind.Unauthenticated,
  [AuthErrorCode.TooManyLoginAttempts]: ErrorKind.TooManyRequests,
  [AuthErrorCode.SignupDisabled]: ErrorKind.NotFound,
}) {}
