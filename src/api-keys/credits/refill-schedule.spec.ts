import { dueRefill, nextRefillAt, refillBoundaryAfter } from './refill-schedule';

const at = (iso: string) => new Date(iso);
const key = (overrides: Partial<Parameters<typeof dueRefill>[0]>) => ({
  creditsRefillInterval: 'daily' as const,
  creditsRefilledAt: null,
  creditsSetAt: at('2026-03-10T15:30:00Z'),
  createdAt: at('2026-03-01T00:00:00Z'),
  ...overrides,
});

describe('refill schedule', () => {
  it('daily boundaries are 00:00 UTC of the next day; monthly the 1st of the next month', () => {
    expect(refillBoundaryAfter('daily', at('2026-03-10T15:30:00Z'))).toEqual(at('2026-03-11T00:00:00Z'));
    expect(refillBoundaryAfter('daily', at('2026-03-11T00:00:00Z'))).toEqual(at('2026-03-12T00:00:00Z'));
    expect(refillBoundaryAfter('daily', at('2026-12-31T23:59:59Z'))).toEqual(at('2027-01-01T00:00:00Z'));
    expect(refillBoundaryAfter('monthly', at('2026-01-31T12:00:00Z'))).toEqual(at('2026-02-01T00:00:00Z'));
    expect(refillBoundaryAfter('monthly', at('2026-12-01T00:00:00Z'))).toEqual(at('2027-01-01T00:00:00Z'));
  });

  it('is due from the boundary on, for the latest boundary passed', () => {
    const k = key({});
    expect(nextRefillAt(k)).toEqual(at('2026-03-11T00:00:00Z'));
    expect(dueRefill(k, at('2026-03-10T23:59:59.999Z'))).toBeNull();
    expect(dueRefill(k, at('2026-03-11T00:00:00Z'))).toEqual(at('2026-03-11T00:00:00Z'));
    expect(dueRefill(k, at('2026-03-14T08:00:00Z'))).toEqual(at('2026-03-14T00:00:00Z'));
  });

  it('counts from the later of the last refill and the last time the balance was set', () => {
    const refilled = key({ creditsRefilledAt: at('2026-03-11T00:00:00Z') });
    expect(dueRefill(refilled, at('2026-03-11T20:00:00Z'))).toBeNull();
    expect(dueRefill(refilled, at('2026-03-12T00:00:00Z'))).toEqual(at('2026-03-12T00:00:00Z'));
    const setAfterRefill = key({
      creditsRefilledAt: at('2026-03-11T00:00:00Z'),
      creditsSetAt: at('2026-03-11T09:00:00Z'),
    });
    expect(nextRefillAt(setAfterRefill)).toEqual(at('2026-03-12T00:00:00Z'));
  });

  it('never refills a key without a refill', () => {
    expect(dueRefill(key({ creditsRefillInterval: null }), at('2030-01-01T00:00:00Z'))).toBeNull();
  });
});
