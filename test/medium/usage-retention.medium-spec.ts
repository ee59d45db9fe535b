import { UsageRetentionJob } from '../../src/usage/usage-retention.job';
import { UsageRepository } from '../../src/usage/usage.repository';
import { ManualClock } from '../support/manual-clock';
import { UsageModule } from '../../src/usage/usage.module';
import { ServiceContext, startFeatureContext } from '../support/feature-context';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** USAGE_RETENTION_DAYS through the real job and table: hours older than the window go, the rest stay. */
describe('usage retention (service level)', () => {
  const clock = new ManualClock(Date.parse('2030-03-20T12:30:00Z'));
  let context: ServiceContext;
  let usage: UsageRepository;

  beforeAll(async () => {
    context = await startFeatureContext({
      imports: [UsageModule],
      clock,
      env: { USAGE_RETENTION_DAYS: '30' },
    });
    usage = context.get(UsageRepository);
  });
  afterAll(() => context?.close());

  /** Every hour with counts of the key, by start. */
  const hoursOf = async (keyId: string): Promise<string[]> => {
    const rows = await usage.countsOfKey(
      'org_retention',
      keyId,
      'hour',
      new Date(0),
      new Date(Date.UTC(9999, 0)),
    );
    return rows.map((row) => row.start.toISOString()).sort();
  };

  it('deletes the hours that start more than USAGE_RETENTION_DAYS ago and keeps the others', async () => {
    const cutoff = clock.now() - 30 * DAY_MS;
    const hour = (ms: number) => ms - (ms % HOUR_MS);
    const increment = (at: number, outcome = 'allowed') => ({
      organizationId: 'org_retention',
      keyId: 'key_retention',
      identityId: null,
      hour: hour(at),
      outcome,
      count: 5,
    });
    await usage.add(
      [
        increment(cutoff - 40 * DAY_MS),
        increment(cutoff - HOUR_MS, 'rate_limited'),
        increment(cutoff + HOUR_MS),
        increment(clock.now()),
      ],
      'retention batch',
    );

    expect(await context.get(UsageRetentionJob).runOnce()).toBe(2);
    expect(await hoursOf('key_retention')).toEqual([
      new Date(hour(cutoff + HOUR_MS)).toISOString(),
      new Date(hour(clock.now())).toISOString(),
    ]);

    // Time passing moves the window: a day later the older of the two kept hours is out of it.
    clock.advance(DAY_MS);
    expect(await context.get(UsageRetentionJob).runOnce()).toBe(1);
    expect(await hoursOf('key_retention')).toEqual([new Date(hour(clock.now() - DAY_MS)).toISOString()]);
  });
});
