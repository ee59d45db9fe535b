import fc from 'fast-check';
import type { Permission } from '../../roles/permissions';
import type { KeyContext, Principal } from '../principal';
import { namedAnswer, validAnswerText } from './verify-answer';

/** A Principal as ApiKeyResolver builds one, with what the answer reads drawn at random. */
const principals = fc
  .record({
    id: fc.string(),
    name: fc.string(),
    // Meta may hold the answer's own field names: the text must not be cut inside it.
    meta: fc.dictionary(
      fc.oneof(fc.constantFrom('credits_remaining', 'expires_at', 'meta', '"}'), fc.string()),
      fc.jsonValue(),
    ),
    identity: fc.option(
      fc.record({ id: fc.string(), external_id: fc.string(), meta: fc.dictionary(fc.string(), fc.string()) }),
    ),
    expiresAt: fc.option(fc.date({ min: new Date(0), max: new Date(4e12), noInvalidDate: true })),
    permissions: fc.uniqueArray(fc.constantFrom('agents:read', 'tasks:create', 'api_keys:verify')),
  })
  .map(({ id, name, meta, identity, expiresAt, permissions }): Principal => ({
    kind: 'api_key',
    organizationId: 'org_1',
    userId: null,
    apiKeyId: id,
    role: 'developer',
    permissions: new Set(permissions as Permission[]),
    key: { id, name, meta, identity, expiresAt } as unknown as KeyContext,
  }));

describe('validAnswerText', () => {
  it('is JSON.stringify of the valid answer, for any key and balance, twice from the parts it keeps', () => {
    fc.assert(
      fc.property(principals, fc.option(fc.nat()), fc.option(fc.nat()), (principal, first, second) => {
        for (const credits of [first, second]) {
          expect(validAnswerText(principal, credits)).toBe(
            JSON.stringify(namedAnswer(principal, true, 'valid', credits)),
          );
        }
      }),
      { numRuns: 500 },
    );
  });
});
