import { defineDomainErrors, ErrorKind } from '../common/domain-error';

export enum IdentityErrorCode {
  NotFound = 'not_found',
  /** Another identity of the organization has this external_id. */
  IdentityExists = 'identity_exists',
  /** Deleting an identity that keys (not deleted) still name. */
  IdentityInUse = 'identity_in_use',
  /** A key names an identity that is not one of its organization's. */
  UnknownIdentity = 'unknown_identity',
}

export class IdentityError extends defineDomainErrors('identities', {
  [IdentityErrorCode.NotFound]: ErrorKind.NotFound,
  [IdentityErrorCode.IdentityExists]: ErrorKind.Conflict,
  [IdentityErrorCode.IdentityInUse]: ErrorKind.Conflict,
  [IdentityErrorCode.UnknownIdentity]: ErrorKind.InvalidInput,
}) {}
