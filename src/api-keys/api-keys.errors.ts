import { defineDomainErrors, ErrorKind } from '../common/domain-error';

export enum ApiKeyErrorCode {
  NotFound = 'not_found',
  /** Changing or rotating a key that is revoked or expired (the key check's 401s are access codes). */
  KeyNotActive = 'key_not_active',
  OwnerRequired = 'owner_required',
  /** team_id missing on a team key, or set on another type. */
  ValidationFailed = 'validation_failed',
  UnknownTeam = 'unknown_team',
  /** Verify describes an API key; an access token is not one. */
  ApiKeyRequired = 'api_key_required',
  /** POST /v1/keys/verify with a permission query that does not parse or names an unknown permission. */
  InvalidPermissionQuery = 'invalid_permission_query',
}

export class ApiKeyError extends defineDomainErrors('api-keys', {
  [ApiKeyErrorCode.NotFound]: ErrorKind.NotFound,
  [ApiKeyErrorCode.KeyNotActive]: ErrorKind.Conflict,
  [ApiKeyErrorCode.OwnerRequired]: ErrorKind.InvalidInput,
  [ApiKeyErrorCode.ValidationFailed]: ErrorKind.InvalidInput,
  [ApiKeyErrorCode.UnknownTeam]: ErrorKind.InvalidInput,
  [ApiKeyErrorCode.ApiKeyRequired]: ErrorKind.Unauthenticated,
  [ApiKeyErrorCode.InvalidPermissionQuery]: ErrorKind.InvalidInput,
}) {}
