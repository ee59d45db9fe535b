import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The OAuth authorization server's state: `oauth_records`, what oidc-provider keeps (codes, tokens,
 * sessions, interactions, clients, grants), each under the SHA-256 of its id with the id left out of the
 * payload; and `oauth_grants`, each user's consent to a client (`grant_…`) as the organization lists it.
 */
export class OAuthServer1796000000000 implements MigrationInterface {
  name = 'OAuthServer1796000000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "oauth_records" ("id_hash" text NOT NULL, "model" text NOT NULL, "payload" jsonb NOT NULL, "grant_id_hash" text, "uid_hash" text, "user_code_hash" text, "expires_at" TIMESTAMP(3) WITH TIME ZONE, "consumed_at" TIMESTAMP(3) WITH TIME ZONE, CONSTRAINT "oauth_records_pkey" PRIMARY KEY ("id_hash"))`,
    );
    await queryRunner.query(`CREATE INDEX "oauth_records_grant_idx" ON "oauth_records" ("grant_id_hash") `);
    await queryRunner.query(`CREATE INDEX "oauth_records_uid_idx" ON "oauth_records" ("uid_hash") `);
    await queryRunner.query(`CREATE INDEX "oauth_records_user_code_idx" ON "oauth_records" ("user_code_hash") `);
    await queryRunner.query(`CREATE INDEX "oauth_records_expires_idx" ON "oauth_records" ("expires_at") `);
    await queryRunner.query(
      `CREATE TABLE "oauth_grants" ("id" text NOT NULL, "provider_grant_hash" text NOT NULL, "organization_id" text NOT NULL, "user_id" text NOT NULL, "client_id" text NOT NULL, "client_name" text, "scopes" text array NOT NULL, "resource" text NOT NULL, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "last_used_at" TIMESTAMP(3) WITH TIME ZONE, CONSTRAINT "oauth_grants_pkey" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "oauth_grants_provider_grant_key" ON "oauth_grants" ("provider_grant_hash") `,
    );
    await queryRunner.query(
      `CREATE INDEX "oauth_grants_organization_idx" ON "oauth_grants" ("organization_id", "created_at") `,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "oauth_grants"`);
    await queryRunner.query(`DROP TABLE "oauth_records"`);
  }
}
