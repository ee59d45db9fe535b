import { MigrationInterface, QueryRunner } from 'typeorm';

/** Organization secrets: values agents send upstream, sealed (AES-256-GCM), unique by name per organization. */
export class OrganizationSecrets1796210000000 implements MigrationInterface {
  name = 'OrganizationSecrets1796210000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE TABLE "organization_secrets" (
      "id" text NOT NULL,
      "organization_id" text NOT NULL CONSTRAINT "organization_secrets_organization_id_fkey" REFERENCES "organizations"("id") ON DELETE CASCADE,
      "name" text NOT NULL,
      "sealed_value" text NOT NULL,
      "last4" text,
      "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(),
      "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(),
      "last_used_at" TIMESTAMP(3) WITH TIME ZONE,
      CONSTRAINT "organization_secrets_pkey" PRIMARY KEY ("id")
    )`);
    await queryRunner.query(
      `CREATE UNIQUE INDEX "organization_secrets_organization_name_key" ON "organization_secrets" ("organization_id", "name")`,
    );
    await queryRunner.query(
      `CREATE INDEX "organization_secrets_organization_created_idx" ON "organization_secrets" ("organization_id", "created_at")`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "organization_secrets"`);
  }
}
