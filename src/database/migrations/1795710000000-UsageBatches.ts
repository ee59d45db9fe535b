import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The ids of usage batches added to key_usage_hourly (src/usage), so a batch retried after a write
 * whose commit was not acknowledged is not counted twice.
 */
export class UsageBatches1795710000000 implements MigrationInterface {
  name = 'UsageBatches1795710000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "usage_batches" ("id" text NOT NULL, "added_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, CONSTRAINT "usage_batches_pkey" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "usage_batches_added_at_idx" ON "usage_batches" ("added_at")`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."usage_batches_added_at_idx"`);
    await queryRunner.query(`DROP TABLE "usage_batches"`);
  }
}
