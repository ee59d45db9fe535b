import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Identities (CONTRACT, "Identities"): the customer behind keys.
 *
 * - `identities`: the integrator's `external_id` (unique in an organization: the index answers the
 *   race between two creates), `meta`, a rate limit and credit columns mirroring the key's (the
 *   balance, its refill, when it was last set and refilled, the amount last set, its generation).
 * - `api_keys.identity_id`: the identity a key belongs to. A key row outlives its deletion (deleted_at),
 *   and the service refuses to delete an identity that live keys name; deleting one that only deleted
 *   keys name clears their reference (ON DELETE SET NULL). The foreign key's lock on the identity row
 *   orders a key attaching to it against the identity's deletion.
 */
export class Identities1795760000000 implements MigrationInterface {
  name = 'Identities1795760000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE TABLE "identities" (
      "id" text NOT NULL,
      "organization_id" text NOT NULL REFERENCES "organizations"("id") ON DELETE CASCADE,
      "external_id" text NOT NULL,
      "meta" jsonb,
      "rate_limit_per_minute" integer,
      "rate_limit_per_hour" integer,
      "credits_remaining" bigint,
      "credits_refill_interval" text,
      "credits_refill_amount" integer,
      "credits_refilled_at" TIMESTAMP(3) WITH TIME ZONE,
      "credits_set_at" TIMESTAMP(3) WITH TIME ZONE,
      "credits_baseline" bigint,
      "credits_generation" integer NOT NULL DEFAULT '0',
      "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(),
      "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(),
      CONSTRAINT "identities_pkey" PRIMARY KEY ("id")
    )`);
    await queryRunner.query(
      `CREATE UNIQUE INDEX "identities_organization_external_id_key" ON "identities" ("organization_id", "external_id")`,
    );
    await queryRunner.query(
      `CREATE INDEX "identities_organization_created_idx" ON "identities" ("organization_id", "created_at")`,
    );
    await queryRunner.query(
      `ALTER TABLE "api_keys" ADD "identity_id" text CONSTRAINT "api_keys_identity_id_fkey" REFERENCES "identities"("id") ON DELETE SET NULL`,
    );
    await queryRunner.query(
      `CREATE INDEX "api_keys_identity_idx" ON "api_keys" ("identity_id") WHERE identity_id IS NOT NULL`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."api_keys_identity_idx"`);
    await queryRunner.query(`ALTER TABLE "api_keys" DROP COLUMN "identity_id"`);
    await queryRunner.query(`DROP TABLE "identities"`);
  }
}
