import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Credits with Redis (src/api-keys/credits/redis-credit-ledger.ts): which copy of a key's balance is
 * live, Redis's or the row's. The epoch is bumped at every hand-over, the lease says until when Redis
 * may spend it, and the hold keeps the row the balance while an instance cannot reach Redis.
 */
export class CreditLeases1795730000000 implements MigrationInterface {
  name = 'CreditLeases1795730000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "api_keys" ADD "credits_epoch" integer NOT NULL DEFAULT '0'`);
    await queryRunner.query(`ALTER TABLE "api_keys" ADD "credits_lease_until" TIMESTAMP(3) WITH TIME ZONE`);
    await queryRunner.query(`ALTER TABLE "api_keys" ADD "credits_hold_until" TIMESTAMP(3) WITH TIME ZONE`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "api_keys" DROP COLUMN "credits_hold_until"`);
    await queryRunner.query(`ALTER TABLE "api_keys" DROP COLUMN "credits_lease_until"`);
    await queryRunner.query(`ALTER TABLE "api_keys" DROP COLUMN "credits_epoch"`);
  }
}
