import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Refresh-token rotation of dashboard sessions (src/sessions): the HMACs of the refresh tokens a refresh
 * replaced, so one presented again ends its session (reuse detection); deleted with their session.
 */
export class DashboardSessionRotation1795720000000 implements MigrationInterface {
  name = 'DashboardSessionRotation1795720000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "dashboard_session_retired_tokens" ("refresh_hash" text NOT NULL, "session_id" text NOT NULL, "retired_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, CONSTRAINT "dashboard_session_retired_tokens_pkey" PRIMARY KEY ("refresh_hash"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "dashboard_session_retired_tokens_session_idx" ON "dashboard_session_retired_tokens" ("session_id") `,
    );
    await queryRunner.query(
      `ALTER TABLE "dashboard_session_retired_tokens" ADD CONSTRAINT "dashboard_session_retired_tokens_session_fkey" FOREIGN KEY ("session_id") REFERENCES "dashboard_sessions"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "dashboard_session_retired_tokens" DROP CONSTRAINT "dashboard_session_retired_tokens_session_fkey"`,
    );
    await queryRunner.query(`DROP INDEX "public"."dashboard_session_retired_tokens_session_idx"`);
    await queryRunner.query(`DROP TABLE "dashboard_session_retired_tokens"`);
  }
}
