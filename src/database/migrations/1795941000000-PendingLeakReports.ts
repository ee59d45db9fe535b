import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Public leak reports taken and not yet applied (src/api-keys): POST /v1/credentials/revoke answers
 * once the report is stored, and its leak_responses are applied after the answer.
 */
export class PendingLeakReports1795941000000 implements MigrationInterface {
  name = 'PendingLeakReports1795941000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "pending_leak_reports" ("id" text NOT NULL, "source" text NOT NULL, "value_hashes" text array NOT NULL, "ip" text, "user_agent" text, "received_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, CONSTRAINT "pending_leak_reports_pkey" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "pending_leak_reports_received_at_idx" ON "pending_leak_reports" ("received_at")`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."pending_leak_reports_received_at_idx"`);
    await queryRunner.query(`DROP TABLE "pending_leak_reports"`);
  }
}
