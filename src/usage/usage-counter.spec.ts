import { Logger } from '@nestjs/common';
import { Clock } from '../common/clock';
import { MAX_PENDING_COUNTERS, UsageCounter } from './usage-counter';
import type { UsageIncrement, UsageRepository } from './usage.repository';

class FixedClock extends Clock {
  constructor(public ms: number) {
    super();
  }
  override now(): number {
    return this.ms;
  }
}

/**
 * Records what would be written, skipping a batch id it has seen as the table's ledger does; fails
 * while `down`, and while `losesReplies` commits the write but fails as a connection lost after COMMIT.
 */
class FakeUsageTable {
  writes: UsageIncrement[][] = [];
  attempts: string[] = [];
  private readonly added = new Set<string>();
  down = false;
  losesReplies = false;
  add(rows: readonly UsageIncrement[], batchId: string): Promise<void> {
    this.attempts.push(batchId);
    if (this.down)
      return Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
    if (!this.added.has(batchId)) {
      this.added.add(batchId);
      this.writes.push([...rows]);
    }
    if (this.losesReplies) return Promise.reject(new Error('Connection terminated unexpectedly'));
    return Promise.resolve();
  }
  /** Sum per (key, hour, outcome) over every write, as the additive upsert leaves the table. */
  totals(): Record<string, number> {
    const totals: Record<string, number> = {};
    for (const row of this.writes.flat()) {
      const id = `${row.keyId} ${new Date(row.hour).toISOString()} ${row.outcome}`;
      totals[id] = (totals[id] ?? 0) + row.count;
    }
    return totals;
  }
}

/** A key as the key check passes it: with the identity its record names, or none. */
const keyOf = (id: string, identityId: string | null = null) => ({
  id,
  identity: identityId === null ? null : { id: identityId },
});

describe('UsageCounter', () => {
  const hour10 = Date.parse('2030-05-10T10:00:00Z');
  let clock: FixedClock;
  let table: FakeUsageTable;
  let counter: UsageCounter;

  let warnings: jest.SpyInstance;

  beforeEach(() => {
    warnings = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    clock = new FixedClock(hour10 + 59 * 60_000);
    table = new FakeUsageTable();
    counter = new UsageCounter(clock, table as unknown as UsageRepository, {
      shutdownGraceMs: 1_000,
      shutdownDrainMs: 0,
    });
  });
  afterEach(async () => {
    await counter.beforeApplicationShutdown();
    jest.restoreAllMocks();
  });

  it('writes one row per key, UTC hour and outcome, sorted as the primary key, in one statement', async () => {
    counter.count('org_b', keyOf('key_b'), 'allowed');
    counter.count('org_a', keyOf('key_a'), 'rate_limited');
    counter.count('org_a', keyOf('key_a'), 'allowed');
    counter.count('org_a', keyOf('key_a'), 'allowed');
    clock.ms = hour10 + 60 * 60_000;
    counter.count('org_a', keyOf('key_a'), 'allowed');
    await counter.flush();

    expect(table.writes).toHaveLength(1);
    expect(
      table.writes[0].map((r) => [
        r.organizationId,
        r.keyId,
        new Date(r.hour).toISOString(),
        r.outcome,
        r.count,
      ]),
    ).toEqual([
      ['org_a', 'key_a', '2030-05-10T10:00:00.000Z', 'allowed', 2],
      ['org_a', 'key_a', '2030-05-10T10:00:00.000Z', 'rate_limited', 1],
      ['org_a', 'key_a', '2030-05-10T11:00:00.000Z', 'allowed', 1],
      ['org_b', 'key_b', '2030-05-10T10:00:00.000Z', 'allowed', 1],
    ]);
  });

  it('keeps the identity a key belonged to with each count: a key moved within an hour has a row under each', async () => {
    counter.count('org_a', keyOf('key_a', 'idt_b'), 'allowed');
    counter.count('org_a', keyOf('key_a'), 'allowed');
    counter.count('org_a', keyOf('key_a', 'idt_a'), 'allowed');
    counter.count('org_a', keyOf('key_a', 'idt_a'), 'allowed');
    counter.count('org_a', keyOf('key_a', 'idt_a'), 'forbidden');
    await counter.flush();

    expect(table.writes).toHaveLength(1);
    // Sorted as the primary key (key, hour, outcome, identity), no identity ('') first.
    expect(table.writes[0].map((r) => [r.keyId, r.outcome, r.identityId, r.count])).toEqual([
      ['key_a', 'allowed', null, 1],
      ['key_a', 'allowed', 'idt_a', 2],
      ['key_a', 'allowed', 'idt_b', 1],
      ['key_a', 'forbidden', 'idt_a', 1],
    ]);
  });

  it('writes nothing when nothing was counted, and each count once', async () => {
    await counter.flush();
    counter.count('org_a', keyOf('key_a'), 'allowed');
    await counter.flush();
    await counter.flush();
    expect(table.writes.map((rows) => rows.length)).toEqual([1]);
  });

  it('keeps the counts of a failed flush and adds them to the next one', async () => {
    counter.count('org_a', keyOf('key_a'), 'allowed');
    table.down = true;
    await counter.flush();
    counter.count('org_a', keyOf('key_a'), 'allowed');
    counter.count('org_a', keyOf('key_a'), 'forbidden');
    table.down = false;
    await counter.flush();
    expect(table.totals()).toEqual({
      'key_a 2030-05-10T10:00:00.000Z allowed': 2,
      'key_a 2030-05-10T10:00:00.000Z forbidden': 1,
    });
  });

  it('retries a failed batch as it was, under the same id, so a commit whose reply was lost is not added twice', async () => {
    counter.count('org_a', keyOf('key_a'), 'allowed');
    table.losesReplies = true;
    await counter.flush();
    expect(counter.backlog.waiting).toBe(1);
    table.losesReplies = false;
    counter.count('org_a', keyOf('key_a'), 'allowed');
    await counter.flush();

    expect(table.attempts).toHaveLength(3);
    expect(table.attempts[1]).toBe(table.attempts[0]);
    expect(table.totals()).toEqual({ 'key_a 2030-05-10T10:00:00.000Z allowed': 2 });
    expect(counter.backlog.waiting).toBe(0);
  });

  it('bounds memory while the database is down: new counters are dropped, existing ones still count', async () => {
    table.down = true;
    for (let i = 0; i < MAX_PENDING_COUNTERS; i++) counter.count('org_a', keyOf(`key_${i}`), 'allowed');
    counter.count('org_a', keyOf('key_over_the_cap'), 'allowed');
    counter.count('org_a', keyOf('key_0'), 'allowed');
    await counter.flush();
    expect(counter.backlog.waiting).toBe(MAX_PENDING_COUNTERS);
    expect(counter.backlog.dropped).toBe(1);
    table.down = false;
    await counter.flush();
    const totals = table.totals();
    expect(Object.keys(totals)).toHaveLength(MAX_PENDING_COUNTERS);
    expect(totals['key_0 2030-05-10T10:00:00.000Z allowed']).toBe(2);
    expect(totals['key_over_the_cap 2030-05-10T10:00:00.000Z allowed']).toBeUndefined();
    expect(warnings).toHaveBeenCalledWith(expect.stringMatching(/^dropped 1 requests from usage/));
  });

  it('starts writing a count one second after it at the latest, however many follow: a crash loses at most that second', async () => {
    jest.useFakeTimers();
    try {
      counter.count('org_a', keyOf('key_a'), 'allowed');
      await jest.advanceTimersByTimeAsync(500);
      // Counts that follow join the write already due; they never put it off.
      counter.count('org_a', keyOf('key_a'), 'allowed');
      await jest.advanceTimersByTimeAsync(499);
      expect(table.writes).toEqual([]);
      await jest.advanceTimersByTimeAsync(1);
      expect(table.totals()).toEqual({ 'key_a 2030-05-10T10:00:00.000Z allowed': 2 });
      // The next count starts the next second.
      counter.count('org_a', keyOf('key_a'), 'forbidden');
      await jest.advanceTimersByTimeAsync(1_000);
      expect(table.writes.length).toBe(2);
    } finally {
      jest.useRealTimers();
    }
  });

  it('writes what is pending at shutdown', async () => {
    counter.count('org_a', keyOf('key_a'), 'key_disabled');
    await counter.beforeApplicationShutdown();
    expect(table.totals()).toEqual({ 'key_a 2030-05-10T10:00:00.000Z key_disabled': 1 });
  });
});
