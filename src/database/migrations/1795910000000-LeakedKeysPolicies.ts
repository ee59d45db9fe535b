import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Leaked keys and organization policies: when a key was first reported leaked, one row per report of a
 * key at a source URL (so `key.leaked` is recorded once per key and URL), and each organization's
 * policies (no row: the defaults). The foreign keys and checks are written by hand, as the entities
 * do not describe them.
 */
export class LeakedKeysPolicies1795910000000 implements MigrationInterface {
  name = 'LeakedKeysPolicies1795910000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "api_keys" ADD "leaked_at" TIMESTAMP(3) WITH TIME ZONE`);
    await queryRunner.query(`CREATE TABLE "api_key_leaks" (
      "key_id" text NOT NULL,
      "source_url" text NOT NULL,
      "organization_id" text NOT NULL,
      "source" text NOT NULL,
      "action_taken" text NOT NULL,
      "reported_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(),
      CONSTRAINT "api_key_leaks_pkey" PRIMARY KEY ("key_id", "source_url"),
      CONSTRAINT "api_key_leaks_key_id_fkey" FOREIGN KEY ("key_id") REFERENCES "api_keys"("id") ON DELETE CASCADE,
      CONSTRAINT "api_key_leaks_source_check" CHECK ("source" IN ('github', 'public_report')),
      CONSTRAINT "api_key_leaks_action_check" CHECK ("action_taken" IN ('revoked', 'disabled', 'none'))
    )`);
    await queryRunner.query(`CREATE TABLE "organization_policies" (
      "organization_id" text NOT NULL,
      "leak_response" text NOT NULL DEFAULT 'revoke',
      "max_key_lifetime_days" integer,
      "require_expiration" boolean NOT NULL DEFAULT false,
      "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(),
      CONSTRAINT "organization_policies_pkey" PRIMARY KEY ("organization_id"),
      CONSTRAINT "organization_policies_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE,
      CONSTRAINT "organization_policies_leak_response_check" CHECK ("leak_response" IN ('revoke', 'disable', 'notify')),
      CONSTRAINT "organization_policies_max_key_lifetime_days_check" CHECK ("max_key_lifetime_days" BETWEEN 1 AND 3650)
    )`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "organization_policies"`);
    await queryRunner.query(`DROP TABLE "api_key_leaks"`);
    await queryRunner.query(`ALTER TABLE "api_keys" DROP COLUMN "leaked_at"`);
  }
}
