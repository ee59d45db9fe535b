import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { LessThan, Repository } from 'typeorm';
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
    const rows = await this.rows.query<{ key_id: string; requests: string; allowed: string }[]>(
      `SELECT key_id,
              SUM(count)::text AS requests,
              COALESCE(SUM(count) FILTER (WHERE outcome = 'allowed'), 0)::text AS allowed
       FROM key_usage_hourly
       WHERE organization_id = $1 AND hour >= $2 AND hour < $3
       GROUP BY key_id
       ORDER BY SUM(count) DESC, key_id ASC`,
      [organizationId, from, end],
    );
    return rows.map((row) => ({
      keyId: row.key_id,
      requests: Number(row.requests),
      allowed: Number(row.allowed),
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
