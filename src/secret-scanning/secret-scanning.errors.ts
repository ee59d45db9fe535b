import { defineDomainErrors, ErrorKind } from '../common/domain-error';

export enum SecretScanningErrorCode {
  /** A GitHub report without both signature headers, signed by a key GitHub does not publish, or whose signature does not match its body. */
  InvalidSignature = 'invalid_signature',
  /** GitHub's public keys could not be read, so no report can be checked now (GitHub retries). */
  SignatureKeysUnavailable = 'signature_keys_unavailable',
  /** POST /v1/credentials/revoke called too often from one client address. */
  TooManyRevokeRequests = 'too_many_revoke_requests',
}

export class SecretScanningError extends defineDomainErrors('secret-scanning', {
  [SecretScanningErrorCode.InvalidSignature]: ErrorKind.Unauthenticated,
  [SecretScanningErrorCode.SignatureKeysUnavailable]: ErrorKind.Unavailable,
  [SecretScanningErrorCode.TooManyRevokeRequests]: ErrorKind.TooManyRequests,
}) {}
