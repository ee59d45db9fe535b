import { plainToInstance } from 'class-transformer';
import { getMetadataStorage, validate } from 'class-validator';
import fc from 'fast-check';
import { createValidationPipe } from '../../common/validation';
import { isPlainVerifyKeyBody, VerifyKeyDto } from './verify-key.dto';

/** A field: mostly a valid value, sometimes an invalid one, sometimes absent (undefined). */
const field = (valid: unknown[], invalid: unknown[]) =>
  fc.oneof(
    { arbitrary: fc.constantFrom(...valid), weight: 4 },
    { arbitrary: fc.constantFrom(...invalid), weight: 1 },
    { arbitrary: fc.constant(undefined), weight: 2 },
  );

/** Bodies near the rules' edges: valid and invalid values of each field, extra fields, non-objects. */
const bodies = fc.oneof(
  {
    weight: 9,
    arbitrary: fc
      .record({
        key: field(
          ['sk_live_abc', '', 'x'.repeat(200), '😀'.repeat(100)],
          ['x'.repeat(201), '😀'.repeat(101), 7, null, ['sk']],
        ),
        permissions: field(['agents:read', '', 'agents:read AND ('], [null, 5, {}]),
        cost: field([0, 1, 1000, 1e3], [1001, -1, 1.5, '1', null]),
        ip: field(
          ['203.0.113.7', '::1', '2001:db8::1'],
          ['1.2.3', '01.2.3.4', '256.1.1.1', 'fe80::1%eth0', '', 5, null],
        ),
        referrer: field(['https://app.example/', 'x'.repeat(2000)], ['x'.repeat(2001), 3, null]),
        extra: fc.oneof(
          { arbitrary: fc.constant(undefined), weight: 5 },
          { arbitrary: fc.constantFrom<unknown>(1, 'x'), weight: 1 },
        ),
      })
      .map((record) => Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined))),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom<unknown>(
      null,
      'sk_live_abc',
      [],
      [{ key: 'sk' }],
      JSON.parse('{"key":"sk","__proto__":{"x":1}}'),
    ),
  },
);

describe('VerifyKeyDto without class-validator', () => {
  it('accepts only bodies class-validator passes, as the instance class-transformer would make', async () => {
    let accepted = 0;
    await fc.assert(
      fc.asyncProperty(bodies, async (body) => {
        if (!isPlainVerifyKeyBody(body)) return;
        accepted++;
        const instance = plainToInstance(VerifyKeyDto, body);
        expect(await validate(instance, { whitelist: true, forbidNonWhitelisted: true })).toEqual([]);
        expect(Object.assign(new VerifyKeyDto(), body)).toEqual(instance);
      }),
      { numRuns: 1000 },
    );
    // The property says something only if the check accepts some bodies.
    expect(accepted).toBeGreaterThan(100);
  });

  it('takes the body without class-validator when the check holds, and validates it when not', async () => {
    const pipe = createValidationPipe();
    const rules = jest.spyOn(getMetadataStorage(), 'getTargetValidationMetadatas');
    const metadata = { type: 'body' as const, metatype: VerifyKeyDto };

    const body = {
      key: 'sk_live_abc',
      permissions: 'agents:read',
      cost: 2,
      ip: '::1',
      referrer: 'https://a.example/',
    };
    const taken = await pipe.transform(body, metadata);
    expect(taken).toBeInstanceOf(VerifyKeyDto);
    expect(taken).toEqual(plainToInstance(VerifyKeyDto, body));
    expect(rules).not.toHaveBeenCalled();

    // Null for an optional field is valid, but not for the check: class-validator takes it, as before.
    expect(await pipe.transform({ key: 'sk_live_abc', cost: null }, metadata)).toBeInstanceOf(VerifyKeyDto);
    expect(rules).toHaveBeenCalled();
    await expect(pipe.transform({ key: 'sk_live_abc', cost: 1001 }, metadata)).rejects.toMatchObject({
      errors: [{ field: 'cost', message: 'cost must not be greater than 1000' }],
    });
    rules.mockRestore();
  });
});
