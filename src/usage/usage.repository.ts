import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { type EntityManager, LessThan, Repository } from 'typeorm';
import { type TaskRunUsage, USAGE_MEASURES } from './usage-measures';
import { KeyUsageHourly } from './key-usage-hourly.entity';
import { UsageBatch } from './usage-batch.entity';
import type { Granularity } from './usage-range';

/** One counter to add: requests of a key in the hour starting at `hour` (epoch ms) with an outcome. */
export interface UsageIncrement {
  organizationId: string;
  keyId: string;
  hour: number;
  outcome: string;
  count: number;
}

export interface OutcomeCount {
  start: Date;
  outcome: string;
  count: number;
}

export interface KeyTotals {
  keyId: string;
  requests: number;
  allowed: number;
  creditsSpent: number;
}

const BUCKET_OF_HOUR: Readonly<Record<Granularity, string>> = {
  hour: 'hour',
  day: `date_trunc('day', hour AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'`,
};

/** The key_usage_hourly table (every read scoped by organization) and its ledger of added batches. */
@Injectable()
export class UsageRepository {
  constructor(
    @InjectRepository(KeyUsageHourly) private readonly rows: Repository<KeyUsageHourly>,
    @InjectRepository(UsageBatch) private readonly batches: Repository<UsageBatch>,
  ) {}

  /**
   * Adds the counts in one statement, once per `batchId`: the statement also records the batch id in
   * usage_batches and adds nothing if it is there already, so retrying a batch whose commit was not
   * acknowledged (a connection lost after COMMIT) cannot count it twice. Rows must be unique by (key,
   * hour, outcome): one INSERT cannot update a row twice. Callers sort them, so two instances lock
   * shared rows in the same order.
   */
  async add(increments: readonly UsageIncrement[], batchId: string): Promise<void> {
    await this.rows.query(
      `WITH claimed AS (
         INSERT INTO usage_batches (id, added_at) VALUES ($6, now()) ON CONFLICT (id) DO NOTHING RETURNING id
       )
       INSERT INTO key_usage_hourly (organization_id, key_id, hour, outcome, count)
       SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::bigint[])
       WHERE EXISTS (SELECT 1 FROM claimed)
       ON CONFLICT (key_id, hour, outcome) DO UPDATE SET count = key_usage_hourly.count + EXCLUDED.count`,
      [
        increments.map((row) => row.organizationId),
        increments.map((row) => row.keyId),
        increments.map((row) => new Date(row.hour).toISOString()),
        increments.map((row) => row.outcome),
        increments.map((row) => row.count),
        batchId,
      ],
    );
  }

  /**
   * Adds what tasks that just ended used to their creating keys' current hour, in the caller's
   * transaction (the one that records the outcomes, so each task counts once).
   */
  async addTaskRuns(manager: EntityManager, runs: readonly TaskRunUsage[]): Promise<void> {
    const rows = runs.flatMap((run) =>
      (
        [
          [USAGE_MEASURES.tasks, 1],
          [USAGE_MEASURES.inputTokens, run.inputTokens],
          [USAGE_MEASURES.outputTokens, run.outputTokens],
          [USAGE_MEASURES.creditsSpent, run.creditsSpent],
        ] as const
      )
        .filter(([, count]) => count > 0)
        .map(([measure, count]) => ({ ...run, measure, count })),
    );
    if (!rows.length) return;
    await manager.query(
      `INSERT INTO key_usage_hourly (organization_id, key_id, hour, outcome, count)
       SELECT organization_id, key_id, date_trunc('hour', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', measure,
              sum(count)
         FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) AS r(organization_id, key_id, measure, count)
        GROUP BY organization_id, key_id, measure
        ORDER BY key_id, measure
       ON CONFLICT (key_id, hour, outcome) DO UPDATE SET count = key_usage_hourly.count + EXCLUDED.count`,
      [
        rows.map((row) => row.organizationId),
        rows.map((row) => row.keyId),
        rows.map((row) => row.measure),
        rows.map((row) => row.count),
      ],
    );
  }

  /** A key's counts per bucket and outcome in [from, end); buckets without requests are absent. */
  async countsOfKey(
    organizationId: string,
    keyId: string,
    granularity: Granularity,
    from: Date,
    end: Date,
  ): Promise<OutcomeCount[]> {
    const rows = await this.rows.query<{ start: Date; outcome: string; count: string }[]>(
      `SELECT ${BUCKET_OF_HOUR[granularity]} AS start, outcome, SUM(count)::text AS count
       FROM key_usage_hourly
       WHERE organization_id = $1 AND key_id = $2 AND hour >= $3 AND hour < $4
       GROUP BY 1, 2`,
      [organizationId, keyId, from, end],
    );
    return rows.map((row) => ({ start: row.start, outcome: row.outcome, count: Number(row.count) }));
  }

  /** The organization's keys used in [from, end), most requests first (ties by key id). */
  async totalsByKey(organizationId: string, from: Date, end: Date): Promise<KeyTotals[]> {
    const rows = await this.rows.query<
      { key_id: string; requests: string; allowed: string; credits_spent: string }[]
    >(
      `SELECT key_id, requests::text, allowed::text, credits_spent::text FROM (
         SELECT key_id,
                COALESCE(SUM(count) FILTER (WHERE outcome NOT LIKE '$%'), 0) AS requests,
                COALESCE(SUM(count) FILTER (WHERE outcome = 'allowed'), 0) AS allowed,
                COALESCE(SUM(count) FILTER (WHERE outcome = $4), 0) AS credits_spent
           FROM key_usage_hourly
          WHERE organization_id = $1 AND hour >= $2 AND hour < $3
          GROUP BY key_id) AS totals
       ORDER BY requests DESC, key_id ASC`,
      [organizationId, from, end, USAGE_MEASURES.creditsSpent],
    );
    return rows.map((row) => ({
      keyId: row.key_id,
      requests: Number(row.requests),
      allowed: Number(row.allowed),
      creditsSpent: Number(row.credits_spent),
    }));
  }

  /** Deletes the hours that start before `cutoff`; returns how many rows went. */
  async deleteBefore(cutoff: Date): Promise<number> {
    const { affected } = await this.rows.delete({ hour: LessThan(cutoff) });
    return affected ?? 0;
  }

  /** Forgets the ids of batches added before `cutoff` (a retry comes within seconds of its first try). */
  async forgetBatchesBefore(cutoff: Date): Promise<void> {
    await this.batches.delete({ addedAt: LessThan(cutoff) });
  }
}
