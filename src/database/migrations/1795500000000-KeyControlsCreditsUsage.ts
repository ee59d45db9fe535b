import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Key controls, credits and usage (CONTRACT.md): the kill switch, the integrator's `meta`, a credit
 * balance with its refill, the last client address, and the hourly usage rollup that the key check's
 * counters are flushed into (src/usage).
 */
export class KeyControlsCreditsUsage1795500000000 implements MigrationInterface {
  name = 'KeyControlsCreditsUsage1795500000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "api_keys" ADD "enabled" boolean NOT NULL DEFAULT true`);
    await queryRunner.query(`ALTER TABLE "api_keys" ADD "meta" jsonb`);
    await queryRunner.query(`ALTER TABLE "api_keys" ADD "credits_remaining" bigint`);
    await queryRunner.query(`ALTER TABLE "api_keys" ADD "credits_refill_interval" text`);
    await queryRunner.query(`ALTER TABLE "api_keys" ADD "credits_refill_amount" integer`);
    await queryRunner.query(`ALTER TABLE "api_keys" ADD "credits_refilled_at" TIMESTAMP(3) WITH TIME ZONE`);
    await queryRunner.query(`ALTER TABLE "api_keys" ADD "credits_baseline" bigint`);
    await queryRunner.query(`ALTER TABLE "api_keys" ADD "credits_set_at" TIMESTAMP(3) WITH TIME ZONE`);
    await queryRunner.query(`ALTER TABLE "api_keys" ADD "credits_generation" integer NOT NULL DEFAULT 0`);
    await queryRunner.query(`ALTER TABLE "api_keys" ADD "credits_low_generation" integer`);
    await queryRunner.query(`ALTER TABLE "api_keys" ADD "last_used_ip" text`);
    await queryRunner.query(
      `CREATE INDEX "api_keys_credits_refill_idx" ON "api_keys" ("credits_refilled_at") WHERE credits_refill_interval IS NOT NULL`,
    );
    await queryRunner.query(
      `CREATE TABLE "key_usage_hourly" ("organization_id" text NOT NULL, "key_id" text NOT NULL, "hour" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "outcome" text NOT NULL, "count" bigint NOT NULL, CONSTRAINT "key_usage_hourly_pkey" PRIMARY KEY ("key_id", "hour", "outcome"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "key_usage_hourly_organization_hour_idx" ON "key_usage_hourly" ("organization_id", "hour")`,
    );
    await queryRunner.query(`CREATE INDEX "key_usage_hourly_hour_idx" ON "key_usage_hourly" ("hour")`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "key_usage_hourly"`);
    await queryRunner.query(`DROP INDEX "public"."api_keys_credits_refill_idx"`);
    for (const column of [
      'last_used_ip',
      'credits_low_generation',
      'credits_generation',
      'credits_set_at',
      'credits_baseline',
      'credits_refilled_at',
      'credits_refill_amount',
      'credits_refill_interval',
      'credits_remaining',
      'meta',
      'enabled',
    ]) {
      await queryRunner.query(`ALTER TABLE "api_keys" DROP COLUMN "${column}"`);
    }
  }
}
