import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Usage by identity (CONTRACT, "Identities"): each row of key_usage_hourly keeps the identity its key
 * belonged to when the counts were made, so an identity's usage is the sum of its keys' rows made under
 * it, including keys since moved or detached, and none of theirs from before or after.
 *
 * - `identity_id` is '' for usage of a key without an identity: it joins the primary key, whose columns
 *   cannot be null, and '' is no identity's id. Rows counted before this migration have '': which
 *   identity a key belonged to then is not known hour by hour, and the key's current identity may not be it.
 * - The primary key becomes (key_id, hour, outcome, identity_id): a key moved within an hour has a row
 *   under each identity; identity_id last, so a key's reads keep the (key_id, hour) prefix.
 * - An index for an identity's buckets, partial: most rows belong to no identity and are never read so.
 *
 * Rebuilding the primary key holds the table's lock while it builds (usage flushes wait, in memory,
 * and are written once it is done). Instances of the previous version still running add usage with the
 * old conflict target, which no longer matches a constraint: their batches are refused, retried, and
 * after five refusals dropped and counted (gatehouse_usage_requests_dropped_total) until they are replaced.
 */
export class IdentityUsage1795900000000 implements MigrationInterface {
  name = 'IdentityUsage1795900000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "key_usage_hourly" ADD "identity_id" text NOT NULL DEFAULT ''`);
    await queryRunner.query(`ALTER TABLE "key_usage_hourly" DROP CONSTRAINT "key_usage_hourly_pkey"`);
    await queryRunner.query(
      `ALTER TABLE "key_usage_hourly" ADD CONSTRAINT "key_usage_hourly_pkey" PRIMARY KEY ("key_id", "hour", "outcome", "identity_id")`,
    );
    await queryRunner.query(
      `CREATE INDEX "key_usage_hourly_identity_hour_idx" ON "key_usage_hourly" ("identity_id", "hour") WHERE identity_id <> ''`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."key_usage_hourly_identity_hour_idx"`);
    await queryRunner.query(`ALTER TABLE "key_usage_hourly" DROP CONSTRAINT "key_usage_hourly_pkey"`);
    // The rows of a key in one hour and outcome under several identities become one again.
    await queryRunner.query(
      `CREATE TEMPORARY TABLE "key_usage_hourly_merged" ON COMMIT DROP AS
         SELECT organization_id, key_id, hour, outcome, SUM(count)::bigint AS count
           FROM "key_usage_hourly" GROUP BY organization_id, key_id, hour, outcome`,
    );
    await queryRunner.query(`DELETE FROM "key_usage_hourly"`);
    await queryRunner.query(`ALTER TABLE "key_usage_hourly" DROP COLUMN "identity_id"`);
    await queryRunner.query(
      `INSERT INTO "key_usage_hourly" (organization_id, key_id, hour, outcome, count)
         SELECT organization_id, key_id, hour, outcome, count FROM "key_usage_hourly_merged"`,
    );
    await queryRunner.query(
      `ALTER TABLE "key_usage_hourly" ADD CONSTRAINT "key_usage_hourly_pkey" PRIMARY KEY ("key_id", "hour", "outcome")`,
    );
  }
}
