import { defineDomainErrors, ErrorKind } from '../common/domain-error';

export enum SessionErrorCode {
  /** No dashboard session goes with the request: no cookie, or one this service never issued. */
  UnknownSession = 'invalid_credentials',
  /** The session was signed out, sat idle too long, or reached its absolute cap. */
  SessionExpired = 'session_expired',
  /** A cookie-authenticated request without the CSRF header, or from another origin. */
  CsrfCheckFailed = 'csrf_check_failed',
}

export class SessionError extends defineDomainErrors('sessions', {
  [SessionErrorCode.UnknownSession]: ErrorKind.Unauthenticated,
  [SessionErrorCode.SessionExpired]: ErrorKind.Unauthenticated,
  [SessionErrorCode.CsrfCheckFailed]: ErrorKind.Forbidden,
}) {}
