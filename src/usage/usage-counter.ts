import { BeforeApplicationShutdown, Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Clock } from '../common/clock';
import { ConfigOf } from '../config/config-namespace';
import { lifecycleConfig } from '../config/namespaces';
import { WriteBacklog } from '../database/write-backlog';
import { MetricsService } from '../metrics/metrics.service';
import { NO_IDENTITY } from './key-usage-hourly.entity';
import { HOUR_MS } from './usage-range';
import { UsageIncrement, UsageRepository } from './usage.repository';

const FLUSH_INTERVAL_MS = 1_000;
/**
 * Distinct (key, identity, hour, outcome) counters held in memory, counting and waiting to be written
 * together. Only a long database outage comes near it (a flush normally empties them every second); past it,
 * new counters are dropped (and counted), existing ones still count.
 */
export const MAX_PENDING_COUNTERS = 100_000;
/** Bounds one statement's parameters and the rows it locks. */
const ROWS_PER_STATEMENT = 5_000;

/**
 * The key a count is for, and the identity it belongs to at that moment (null: none). The key check's
 * `principal.key` is one: the identity comes with the key's cached record, so counting reads nothing.
 */
export interface CountedKey {
  readonly id: string;
  readonly identity: { readonly id: string } | null;
}

interface KeyCounters {
  organizationId: string;
  /** identity id (NO_IDENTITY: none) -> outcome -> count. Nearly always one identity per key and hour. */
  byIdentity: Map<string, Map<string, number>>;
}

/** Rows taken out of the counters to be added in one statement; the id makes a retry of it idempotent. */
interface PendingBatch {
  id: string;
  rows: UsageIncrement[];
}

/**
 * Every request of a resolved key, counted on the request path without a database write: counters
 * by key, the identity the key belongs to, UTC hour and outcome in memory, added into key_usage_hourly
 * about once a second in one statement per batch. Additions (never overwrites) keep instances exact on
 * one database. A batch the database does not take is kept as it is and retried with backoff (the
 * repository skips a batch id it has already added, so a batch whose commit was not acknowledged is not
 * added twice); counts made meanwhile wait in the counters; shutdown writes what is left.
 */
@Injectable()
export class UsageCounter implements BeforeApplicationShutdown {
  private readonly logger = new Logger('Usage');
  /** hour start (epoch ms) -> key id -> counts by outcome. */
  private pending = new Map<number, Map<string, KeyCounters>>();
  private pendingCounters = 0;
  /** Batches taken from the counters and not yet written, oldest first. */
  private unwritten: PendingBatch[] = [];
  private unwrittenRows = 0;
  /** Usage counters waiting for the database (exported to MetricsService). */
  readonly backlog = new WriteBacklog({
    what: 'usage counters',
    droppedWhat: 'requests from usage',
    capacity: MAX_PENDING_COUNTERS,
    delayMs: FLUSH_INTERVAL_MS,
    logger: this.logger,
    waiting: () => this.pendingCounters + this.unwrittenRows,
    write: () => this.writePending(),
    discardOldest: () => {
      const batch = this.unwritten.shift();
      if (!batch) return 0;
      this.unwrittenRows -= batch.rows.length;
      return batch.rows.reduce((requests, row) => requests + row.count, 0);
    },
  });

  constructor(
    private readonly clock: Clock,
    private readonly repository: UsageRepository,
    @Inject(lifecycleConfig.KEY) private readonly lifecycle: ConfigOf<typeof lifecycleConfig>,
    // Optional for the unit spec, which builds the counter by hand; the app always provides it.
    @Optional() metrics?: MetricsService,
  ) {
    metrics?.exportBacklog(this.backlog, {
      waiting: [
        'gatehouse_usage_counters_waiting',
        'Usage counters (key, identity, hour, outcome) held in memory until the database takes them.',
      ],
      dropped: [
        'gatehouse_usage_requests_dropped_total',
        'Requests left out of usage because MAX_PENDING_COUNTERS already waited (database unreachable).',
      ],
    });
  }

  /**
   * Counts `amount` (1: a request) of `outcome` for the key, under its identity, in this hour; a
   * negative amount takes back.
   */
  count(organizationId: string, key: CountedKey, outcome: string, amount = 1): void {
    const now = this.clock.now();
    this.add(organizationId, key.id, key.identity?.id ?? NO_IDENTITY, now - (now % HOUR_MS), outcome, amount);
    this.backlog.schedule();
  }

  /** Writes every pending counter; resolves once they are in the database or kept for a retry. */
  flush(): Promise<void> {
    return this.backlog.flush();
  }

  /**
   * Runs before connections close (see AuditService.beforeApplicationShutdown): a database that is
   * down gets a fifth of SHUTDOWN_GRACE_MS; what is still not written is logged as a count.
   */
  async beforeApplicationShutdown(): Promise<void> {
    await this.backlog.close(this.lifecycle.shutdownGraceMs / 5);
  }

  private add(
    organizationId: string,
    keyId: string,
    identityId: string,
    hour: number,
    outcome: string,
    amount: number,
  ): void {
    const byOutcome = this.pending.get(hour)?.get(keyId)?.byIdentity.get(identityId);
    const current = byOutcome?.get(outcome);
    if (current !== undefined) {
      byOutcome!.set(outcome, current + amount);
      return;
    }
    if (!this.backlog.admit(1)) return;
    this.countersOf(organizationId, keyId, identityId, hour).set(outcome, amount);
    this.pendingCounters += 1;
  }

  private countersOf(
    organizationId: string,
    keyId: string,
    identityId: string,
    hour: number,
  ): Map<string, number> {
    let keys = this.pending.get(hour);
    if (!keys) this.pending.set(hour, (keys = new Map()));
    let counters = keys.get(keyId);
    if (!counters) keys.set(keyId, (counters = { organizationId, byIdentity: new Map() }));
    let byOutcome = counters.byIdentity.get(identityId);
    if (!byOutcome) counters.byIdentity.set(identityId, (byOutcome = new Map()));
    return byOutcome;
  }

  /**
   * Writes the unwritten batches in order, then (once) the counters as new batches. A failure keeps
   * the failed batch and those after it for the retry, unchanged; counts made meanwhile stay in the
   * counters, where they add up instead of piling up batches.
   */
  private async writePending(): Promise<void> {
    let tookCounters = false;
    for (;;) {
      if (!this.unwritten.length) {
        if (tookCounters || !this.pendingCounters) return;
        this.unwritten = this.batchesOf(this.takePending());
        tookCounters = true;
      }
      const batch = this.unwritten[0];
      await this.repository.add(batch.rows, batch.id);
      this.unwritten.shift();
      this.unwrittenRows -= batch.rows.length;
      this.backlog.progressed();
    }
  }

  private batchesOf(increments: UsageIncrement[]): PendingBatch[] {
    const batches: PendingBatch[] = [];
    for (let done = 0; done < increments.length; done += ROWS_PER_STATEMENT) {
      batches.push({ id: randomUUID(), rows: increments.slice(done, done + ROWS_PER_STATEMENT) });
    }
    this.unwrittenRows += increments.length;
    return batches;
  }

  /**
   * Empties the counters into rows sorted as the table's primary key, so that instances adding to
   * the same rows lock them in the same order and cannot deadlock.
   */
  private takePending(): UsageIncrement[] {
    const pending = this.pending;
    this.pending = new Map();
    this.pendingCounters = 0;
    const increments: UsageIncrement[] = [];
    for (const [hour, keys] of pending) {
      for (const [keyId, { organizationId, byIdentity }] of keys) {
        for (const [identity, byOutcome] of byIdentity) {
          const identityId = identity === NO_IDENTITY ? null : identity;
          for (const [outcome, count] of byOutcome)
            increments.push({ organizationId, keyId, identityId, hour, outcome, count });
        }
      }
    }
    // As the primary key (key_id, hour, outcome, identity_id); no identity ('') sorts first, as there.
    return increments.sort(
      (a, b) =>
        compareText(a.keyId, b.keyId) ||
        a.hour - b.hour ||
        compareText(a.outcome, b.outcome) ||
        compareText(a.identityId ?? NO_IDENTITY, b.identityId ?? NO_IDENTITY),
    );
  }
}

const compareText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
