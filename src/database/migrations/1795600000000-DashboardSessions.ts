import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Dashboard sessions (src/sessions): one row per sign-in, holding only the HMAC of the refresh token
 * the browser keeps in an httpOnly cookie, with the times that end it (idle, absolute cap, sign-out).
 */
export class DashboardSessions1795600000000 implements MigrationInterface {
  name = 'DashboardSessions1795600000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "dashboard_sessions" ("id" text NOT NULL, "organization_id" text NOT NULL, "user_id" text NOT NULL, "refresh_hash" text NOT NULL, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "last_used_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "expires_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "revoked_at" TIMESTAMP(3) WITH TIME ZONE, "user_agent" text, "ip" text, CONSTRAINT "dashboard_sessions_pkey" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "dashboard_sessions_refresh_hash_key" ON "dashboard_sessions" ("refresh_hash")`,
    );
    await queryRunner.query(`CREATE INDEX "dashboard_sessions_user_idx" ON "dashboard_sessions" ("user_id")`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."dashboard_sessions_user_idx"`);
    await queryRunner.query(`DROP INDEX "public"."dashboard_sessions_refresh_hash_key"`);
    await queryRunner.query(`DROP TABLE "dashboard_sessions"`);
  }
}
