import { defineDomainErrors, ErrorKind } from '../common/domain-error';

export enum OAuthErrorCode {
  /** No grant of that id that the caller may see (another user's, another organization's, or none). */
  GrantNotFound = 'not_found',
}

export class OAuthError extends defineDomainErrors('oauth', {
  [OAuthErrorCode.GrantNotFound]: ErrorKind.NotFound,
}) {}
