import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The audit chain under a key (AUDIT_CHAIN_SECRET): `keyed` tells an entry linked with HMAC-SHA256 from
 * one written before, whose keyless SHA-256 link stays verifiable as the chain's legacy start (every
 * existing row is such an entry, hence the default for them only); and `audit_chain_heads` keeps, apart
 * from the entries, where each organization's chain ends, signed, so that deleting its last entries shows.
 */
export class AuditChainKey1795960000000 implements MigrationInterface {
  name = 'AuditChainKey1795960000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "audit_entries" ADD "keyed" boolean NOT NULL DEFAULT false`);
    // New rows say what they are: a forgotten value must fail, not pass for a legacy entry.
    await queryRunner.query(`ALTER TABLE "audit_entries" ALTER COLUMN "keyed" DROP DEFAULT`);
    await queryRunner.query(
      `CREATE TABLE "audit_chain_heads" ("organization_id" text NOT NULL, "sequence" bigint NOT NULL, "entry_id" text NOT NULL, "hash" text NOT NULL, "mac" text NOT NULL, CONSTRAINT "audit_chain_heads_pkey" PRIMARY KEY ("organization_id"))`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "audit_chain_heads"`);
    await queryRunner.query(`ALTER TABLE "audit_entries" DROP COLUMN "keyed"`);
  }
}
