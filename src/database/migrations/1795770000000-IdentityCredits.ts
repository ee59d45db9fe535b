import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Identity credits spent like a key's (src/api-keys/credits): the columns the Redis ledger's hand-over
 * needs (epoch, lease, hold; see CreditLeases) and the generation whose `identity.credits_low` was sent,
 * so that both tables of balances share every credit statement
 * (src/api-keys/credits/credit-balance-table.ts).
 */
export class IdentityCredits1795770000000 implements MigrationInterface {
  name = 'IdentityCredits1795770000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "identities"
      ADD "credits_low_generation" integer,
      ADD "credits_epoch" integer NOT NULL DEFAULT '0',
      ADD "credits_lease_until" TIMESTAMP(3) WITH TIME ZONE,
      ADD "credits_hold_until" TIMESTAMP(3) WITH TIME ZONE`);
    await queryRunner.query(
      `CREATE INDEX "identities_credits_refill_idx" ON "identities" ("credits_refilled_at") WHERE credits_refill_interval IS NOT NULL`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."identities_credits_refill_idx"`);
    await queryRunner.query(`ALTER TABLE "identities"
      DROP COLUMN "credits_hold_until", DROP COLUMN "credits_lease_until",
      DROP COLUMN "credits_epoch", DROP COLUMN "credits_low_generation"`);
  }
}
