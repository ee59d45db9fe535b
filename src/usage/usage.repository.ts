import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { type EntityManager, LessThan, Repository } from 'typeorm';
import { type TaskRunUsage, USAGE_MEASURES } from './usage-measures';
import { KeyUsageHourly, NO_IDENTITY } from './key-usage-hourly.entity';
import { UsageBatch } from './usage-batch.entity';
import type { Granularity } from './usage-range';

/**
 * One counter to add: requests of a key, made while it belonged to `identityId` (null: none), in the
 * hour starting at `hour` (epoch ms) with an outcome.
 */
export interface UsageIncrement {
  organizationId: string;
  keyId: string;
  identityId: string | null;
  hour: number;
  outcome: string;
  count: number;
}

export interface OutcomeCount {
  start: Date;
  outcome: string;
  count: number;
}

export interface UsageTotals {
  requests: number;
  allowed: number;
  creditsSpent: number;
}

export interface KeyTotals extends UsageTotals {
  keyId: string;
}

export interface IdentityTotals extends UsageTotals {
  identityId: string;
}

export interface GrantTotals extends UsageTotals {
  grantId: string;
}

/**
 * The rows of OAuth access tokens' requests: counted under their grant's `grant_…` id in key_id (no
 * identity), beside the keys' rows. Key-level reads leave them out; `\_` is LIKE's escaped underscore.
 */
const GRANT_ROWS = `key_id LIKE 'grant\\_%'`;
const KEY_ROWS = `NOT ${GRANT_ROWS}`;

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
   * hour, outcome, identity): one INSERT cannot update a row twice. Callers sort them as the primary
   * key, so two instances lock shared rows in the same order.
   */
  async add(increments: readonly UsageIncrement[], batchId: string): Promise<void> {
    await this.rows.query(
      `WITH claimed AS (
         INSERT INTO usage_batches (id, added_at) VALUES ($7, now()) ON CONFLICT (id) DO NOTHING RETURNING id
       )
       INSERT INTO key_usage_hourly (organization_id, key_id, hour, outcome, identity_id, count)
       SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::text[], $6::bigint[])
       WHERE EXISTS (SELECT 1 FROM claimed)
       ON CONFLICT (key_id, hour, outcome, identity_id)
       DO UPDATE SET count = key_usage_hourly.count + EXCLUDED.count`,
      [
        increments.map((row) => row.organizationId),
        increments.map((row) => row.keyId),
        increments.map((row) => new Date(row.hour).toISOString()),
        increments.map((row) => row.outcome),
        increments.map((row) => row.identityId ?? NO_IDENTITY),
        increments.map((row) => row.count),
        batchId,
      ],
    );
  }

  /**
   * Adds what tasks that just ended used to their creating keys' current hour, in the caller's
   * transaction (the one that records the outcomes, so each task counts once), under the identity each
   * key belongs to now, as a request made now would be: `identityOf` by key id (TaskRunMeter reads it
   * from the keys module; null or absent, a key without one or no longer there: none).
   */
  async addTaskRuns(
    manager: EntityManager,
    runs: readonly TaskRunUsage[],
    identityOf: ReadonlyMap<string, string | null>,
  ): Promise<void> {
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
      `INSERT INTO key_usage_hourly (organization_id, key_id, hour, outcome, identity_id, count)
       SELECT r.organization_id, r.key_id, date_trunc('hour', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC',
              r.measure, r.identity_id, sum(r.count)
         FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[])
           AS r(organization_id, key_id, measure, count, identity_id)
        GROUP BY r.organization_id, r.key_id, r.measure, r.identity_id
        ORDER BY r.key_id, r.measure
       ON CONFLICT (key_id, hour, outcome, identity_id)
       DO UPDATE SET count = key_usage_hourly.count + EXCLUDED.count`,
      [
        rows.map((row) => row.organizationId),
        rows.map((row) => row.keyId),
        rows.map((row) => row.measure),
        rows.map((row) => row.count),
        rows.map((row) => identityOf.get(row.keyId) ?? NO_IDENTITY),
      ],
    );
  }

  /**
   * A key's counts per bucket and outcome in [from, end), under whichever identity; buckets without
   * requests are absent.
   */
  countsOfKey(
    organizationId: string,
    keyId: string,
    granularity: Granularity,
    from: Date,
    end: Date,
  ): Promise<OutcomeCount[]> {
    return this.countsWhere('key_id = $4', [keyId], organizationId, granularity, from, end);
  }

  /** A grant's counts (its OAuth access tokens' requests) per bucket and outcome in [from, end). */
  countsOfGrant(
    organizationId: string,
    grantId: string,
    granularity: Granularity,
    from: Date,
    end: Date,
  ): Promise<OutcomeCount[]> {
    return this.countsWhere(
      `key_id = $4 AND ${GRANT_ROWS}`,
      [grantId],
      organizationId,
      granularity,
      from,
      end,
    );
  }

  /** The counts of an identity's keys made under it, per bucket and outcome in [from, end). */
  countsOfIdentity(
    organizationId: string,
    identityId: string,
    granularity: Granularity,
    from: Date,
    end: Date,
  ): Promise<OutcomeCount[]> {
    // `<> ''` spelled out lets the planner use the partial index whatever $2 is.
    return this.countsWhere(
      `identity_id = $4 AND identity_id <> ''`,
      [identityId],
      organizationId,
      granularity,
      from,
      end,
    );
  }

  /**
   * All the organization's key counts per bucket and outcome in [from, end): every key's, with or
   * without an identity, and those of keys deleted since (their requests were still the organization's).
   * OAuth grants' rows are left out: the series sums keys, as GET /v1/usage lists them.
   */
  countsOfOrganization(
    organizationId: string,
    granularity: Granularity,
    from: Date,
    end: Date,
  ): Promise<OutcomeCount[]> {
    return this.countsWhere(KEY_ROWS, [], organizationId, granularity, from, end);
  }

  /** `subject` narrows the organization's rows; its parameters are $4 onwards. */
  private async countsWhere(
    subject: string,
    subjectParams: readonly string[],
    organizationId: string,
    granularity: Granularity,
    from: Date,
    end: Date,
  ): Promise<OutcomeCount[]> {
    const rows = await this.rows.query<{ start: Date; outcome: string; count: string }[]>(
      `SELECT ${BUCKET_OF_HOUR[granularity]} AS start, outcome, SUM(count)::text AS count
       FROM key_usage_hourly
       WHERE organization_id = $1 AND hour >= $2 AND hour < $3 AND ${subject}
       GROUP BY 1, 2`,
      [organizationId, from, end, ...subjectParams],
    );
    return rows.map((row) => ({ start: row.start, outcome: row.outcome, count: Number(row.count) }));
  }

  /** The organization's keys used in [from, end), most requests first (ties by key id); no grants. */
  async totalsByKey(organizationId: string, from: Date, end: Date): Promise<KeyTotals[]> {
    const rows = await this.totalsBy('key_id', KEY_ROWS, organizationId, from, end);
    return rows.map(({ id, ...totals }) => ({ keyId: id, ...totals }));
  }

  /** The organization's OAuth grants used in [from, end), most requests first (ties by grant id). */
  async totalsByGrant(organizationId: string, from: Date, end: Date): Promise<GrantTotals[]> {
    const rows = await this.totalsBy('key_id', GRANT_ROWS, organizationId, from, end);
    return rows.map(({ id, ...totals }) => ({ grantId: id, ...totals }));
  }

  /**
   * The identities whose keys were used under them in [from, end), most requests first (ties by
   * identity id); usage of keys without an identity is not any identity's.
   */
  async totalsByIdentity(organizationId: string, from: Date, end: Date): Promise<IdentityTotals[]> {
    const rows = await this.totalsBy('identity_id', `identity_id <> ''`, organizationId, from, end);
    return rows.map(({ id, ...totals }) => ({ identityId: id, ...totals }));
  }

  private async totalsBy(
    column: 'key_id' | 'identity_id',
    filter: string,
    organizationId: string,
    from: Date,
    end: Date,
  ): Promise<(UsageTotals & { id: string })[]> {
    const rows = await this.rows.query<
      { id: string; requests: string; allowed: string; credits_spent: string }[]
    >(
      // Sorted by the sums themselves (totals.requests): a bare ORDER BY requests names the text
      // output column, and text order puts 20 before 3.
      `SELECT id, requests::text, allowed::text, credits_spent::text FROM (
         SELECT ${column} AS id,
                COALESCE(SUM(count) FILTER (WHERE outcome NOT LIKE '$%'), 0) AS requests,
                COALESCE(SUM(count) FILTER (WHERE outcome = 'allowed'), 0) AS allowed,
                COALESCE(SUM(count) FILTER (WHERE outcome = $4), 0) AS credits_spent
           FROM key_usage_hourly
          WHERE organization_id = $1 AND hour >= $2 AND hour < $3 AND ${filter}
          GROUP BY ${column}) AS totals
       ORDER BY totals.requests DESC, totals.id ASC`,
      [organizationId, from, end, USAGE_MEASURES.creditsSpent],
    );
    return rows.map((row) => ({
      id: row.id,
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
