import { ACCESS_STEPS, GLOBAL_GUARDS } from './access-check';

describe('the key check order', () => {
  it('is credential, restrictions, permission, policies, rate limit, credits, concurrency across the guards', () => {
    // Nest runs global guards in registration order; AccessModule registers GLOBAL_GUARDS as listed.
    expect(GLOBAL_GUARDS.flatMap((guard) => guard.steps)).toEqual([...ACCESS_STEPS]);
    // Written out, not derived: the order is the contract's, and changing it must change this line too.
    expect(ACCESS_STEPS.join(' > ')).toBe(
      'credential > restrictions > permission > policies > rate_limit > credits > concurrency',
    );
  });
});
