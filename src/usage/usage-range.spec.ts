import { BucketRange, MAX_BUCKETS, parseTimestamp } from './usage-range';

const at = (iso: string): number => Date.parse(iso);
const iso = (ms: number): string => new Date(ms).toISOString();

describe('BucketRange.resolve', () => {
  const now = at('2030-05-10T13:45:12.345Z');

  it('defaults to the 24 hours that end with the current one', () => {
    const range = BucketRange.resolve({}, now);
    expect([iso(range.from), iso(range.to), range.count]).toEqual([
      '2030-05-09T14:00:00.000Z',
      '2030-05-10T13:00:00.000Z',
      24,
    ]);
  });

  it('defaults by day to the 24 UTC days that end today', () => {
    const range = BucketRange.resolve({ granularity: 'day' }, now);
    expect([iso(range.from), iso(range.to), range.count]).toEqual([
      '2030-04-17T00:00:00.000Z',
      '2030-05-10T00:00:00.000Z',
      24,
    ]);
  });

  it('rounds both ends down; `to` is the start of the last bucket', () => {
    const range = BucketRange.resolve(
      { from: at('2030-05-01T10:59:59Z'), to: at('2030-05-01T12:00:00Z') },
      now,
    );
    expect(range.starts().map(iso)).toEqual([
      '2030-05-01T10:00:00.000Z',
      '2030-05-01T11:00:00.000Z',
      '2030-05-01T12:00:00.000Z',
    ]);
    expect(iso(range.end)).toBe('2030-05-01T13:00:00.000Z');
  });

  it('fills a missing end: only from runs to now, only to goes 23 buckets back', () => {
    const onlyFrom = BucketRange.resolve({ from: at('2030-05-10T10:30:00Z') }, now);
    expect([iso(onlyFrom.from), iso(onlyFrom.to)]).toEqual([
      '2030-05-10T10:00:00.000Z',
      '2030-05-10T13:00:00.000Z',
    ]);
    const onlyTo = BucketRange.resolve({ to: at('2030-01-02T05:10:00Z'), granularity: 'day' }, now);
    expect([iso(onlyTo.from), iso(onlyTo.to)]).toEqual([
      '2029-12-10T00:00:00.000Z',
      '2030-01-02T00:00:00.000Z',
    ]);
  });

  it('allows one bucket (from = to) and exactly MAX_BUCKETS, refuses one more', () => {
    expect(BucketRange.resolve({ from: now, to: now }, now).count).toBe(1);
    const to = at('2030-05-10T13:00:00Z');
    const from = to - (MAX_BUCKETS - 1) * 3_600_000;
    expect(BucketRange.resolve({ from, to }, now).count).toBe(MAX_BUCKETS);
    expect(() => BucketRange.resolve({ from: from - 3_600_000, to }, now)).toThrow(
      expect.objectContaining({
        code: 'validation_failed',
        errors: [expect.objectContaining({ field: 'from' })],
      }),
    );
  });

  it('refuses from after to, even within one bucket of rounding', () => {
    expect(() =>
      BucketRange.resolve({ from: at('2030-05-02T00:00:00Z'), to: at('2030-05-01T23:59:59Z') }, now),
    ).toThrow(expect.objectContaining({ code: 'validation_failed', detail: 'from must not be after to' }));
  });
});

describe('parseTimestamp', () => {
  it('reads ISO 8601 dates and times, UTC when no offset is given', () => {
    expect(parseTimestamp('2030-05-01')).toBe(at('2030-05-01T00:00:00Z'));
    expect(parseTimestamp('2030-05-01T10:20')).toBe(at('2030-05-01T10:20:00Z'));
    expect(parseTimestamp('2030-05-01T10:20:30.5+02:00')).toBe(at('2030-05-01T08:20:30.500Z'));
  });

  it.each([
    '',
    'yesterday',
    '2030-02-30',
    '2030-05-01 10:00',
    '1714550400',
    '2030-W01',
    '1969-12-31T23:00Z',
    '+012030-01-01',
  ])('refuses %j', (value) => {
    expect(parseTimestamp(value)).toBeUndefined();
  });
});
