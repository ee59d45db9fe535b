import { SecretBox } from './secret-box';

describe('SecretBox', () => {
  const box = new SecretBox('x'.repeat(32), 'test');

  it('round-trips and never stores the clear text', () => {
    const sealed = box.seal('sk_secret_value');
    expect(sealed).not.toContain('sk_secret_value');
    expect(box.open(sealed)).toBe('sk_secret_value');
  });

  it('refuses a tampered box and another purpose', () => {
    const sealed = box.seal('value');
    const [iv, tag, data] = sealed.split('.');
    const flipped = Buffer.from(data, 'base64url');
    flipped[0] ^= 1;
    expect(() => box.open([iv, tag, flipped.toString('base64url')].join('.'))).toThrow();
    expect(() => new SecretBox('x'.repeat(32), 'other').open(sealed)).toThrow();
  });
});
