import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The OAuth client a user acted through (an OAuth access token): the audit entry's actor names it
 * beside the user. Null for every other actor, and for every entry written before.
 */
export class AuditActorClient1796100000000 implements MigrationInterface {
  name = 'AuditActorClient1796100000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "audit_entries" ADD "actor_client_id" text`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "audit_entries" DROP COLUMN "actor_client_id"`);
  }
}
