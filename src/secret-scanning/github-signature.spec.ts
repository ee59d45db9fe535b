import { createPublicKey, generateKeyPairSync, sign } from 'node:crypto';
import { parsePublicKey, verifiesReport } from './github-signature';

// GitHub's published sample (secret scanning partner program, "Implement signature verification").
const SAMPLE = {
  keyIdentifier: 'bcb53661c06b4728e59d897fb6165d5c9cda0fd9cdf9d09ead458168deb7518c',
  publicKey:
    'MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEYAGMWO8XgCamYKMJS6jc/qgvSlAdAjPuDPRcXU22YxgBrz+zoN19MzuRyW87qEt9/AmtoNP5GrobzUvQSyJFVw==',
  body: '[{"source":"commit","token":"some_token","type":"some_type","url":"https://example.com/base-repo-url/"}]',
  signature:
    'MEQCIQDaMKqrGnE27S0kgMrEK0eYBmyG0LeZismAEz/BgZyt7AIfXt9fErtRS4XaeSt/AO1RtBY66YcAdjxji410VQV4xg==',
};

const samplePem = `-----BEGIN PUBLIC KEY-----\n${SAMPLE.publicKey}\n-----END PUBLIC KEY-----\n`;
const sampleKey = createPublicKey({
  key: Buffer.from(SAMPLE.publicKey, 'base64'),
  format: 'der',
  type: 'spki',
});

describe('verifiesReport', () => {
  it("verifies GitHub's published sample, byte for byte (104 bytes)", () => {
    const body = Buffer.from(SAMPLE.body, 'utf8');
    expect(body).toHaveLength(104);
    expect(verifiesReport(body, SAMPLE.signature, sampleKey)).toBe(true);
    // The PEM form, as the public-keys document gives it, is the same key.
    expect(verifiesReport(body, SAMPLE.signature, parsePublicKey(samplePem)!)).toBe(true);
  });

  it('fails for any change to the body: a byte changed, added, removed, or the JSON re-serialised', () => {
    const body = Buffer.from(SAMPLE.body, 'utf8');
    for (let i = 0; i < body.length; i += 1) {
      const changed = Buffer.from(body);
      changed[i] ^= 0x01;
      expect(verifiesReport(changed, SAMPLE.signature, sampleKey)).toBe(false);
    }
    expect(verifiesReport(Buffer.concat([body, Buffer.from('\n')]), SAMPLE.signature, sampleKey)).toBe(false);
    expect(verifiesReport(body.subarray(0, -1), SAMPLE.signature, sampleKey)).toBe(false);
    const reserialised = Buffer.from(JSON.stringify(JSON.parse(SAMPLE.body), null, 1));
    expect(verifiesReport(reserialised, SAMPLE.signature, sampleKey)).toBe(false);
  });

  it('fails for a changed, empty or non-DER signature, and under another key', () => {
    const body = Buffer.from(SAMPLE.body, 'utf8');
    const signature = Buffer.from(SAMPLE.signature, 'base64');
    signature[signature.length - 1] ^= 0x01;
    expect(verifiesReport(body, signature.toString('base64'), sampleKey)).toBe(false);
    expect(verifiesReport(body, '', sampleKey)).toBe(false);
    expect(verifiesReport(body, 'not base64 at all!', sampleKey)).toBe(false);
    const other = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    expect(verifiesReport(body, SAMPLE.signature, other.publicKey)).toBe(false);
  });

  it('verifies what a key pair of the same kind signs (how the e2e tests sign their reports)', () => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const body = Buffer.from('[{"token":"x","type":"t","url":"https://example.com","source":"commit"}]');
    const signature = sign('sha256', body, { key: privateKey, dsaEncoding: 'der' }).toString('base64');
    expect(verifiesReport(body, signature, publicKey)).toBe(true);
  });
});

describe('parsePublicKey', () => {
  it('reads an EC public key in PEM and refuses anything else', () => {
    expect(parsePublicKey(samplePem)?.asymmetricKeyType).toBe('ec');
    expect(parsePublicKey('not a key')).toBeUndefined();
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 });
    expect(parsePublicKey(rsa.publicKey.export({ type: 'spki', format: 'pem' }) as string)).toBeUndefined();
  });
});
