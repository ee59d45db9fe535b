import { createPublicKey, type KeyObject, verify } from 'node:crypto';

/**
 * Whether `signature` (base64 of a DER-encoded ECDSA signature, as GitHub sends it in
 * `Github-Public-Key-Signature`) signs exactly these bytes with SHA-256 under `publicKey`. The bytes are
 * the request body as received: parsing and serialising it again would change what was signed.
 */
export function verifiesReport(rawBody: Buffer, signature: string, publicKey: KeyObject): boolean {
  const signatureBytes = Buffer.from(signature, 'base64');
  if (!signatureBytes.length) return false;
  try {
    return verify('sha256', rawBody, { key: publicKey, dsaEncoding: 'der' }, signatureBytes);
  } catch {
    // A signature that is not DER, or a key of another type: not a valid signature either way.
    return false;
  }
}

/** A public key as GitHub publishes it (PEM), or undefined when it is not one. */
export function parsePublicKey(pem: string): KeyObject | undefined {
  try {
    const key = createPublicKey(pem);
    return key.asymmetricKeyType === 'ec' ? key : undefined;
  } catch {
    return undefined;
  }
}
