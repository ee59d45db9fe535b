import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `GET /v1/audit-log?actor_id=`: one actor's entries, newest first, without reading the organization's
 * whole log (an administrator's actions are a small part of a log mostly written by keys).
 */
export class AuditActorIndex1795920000000 implements MigrationInterface {
  name = 'AuditActorIndex1795920000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE INDEX "audit_entries_organization_actor_created_idx" ON "audit_entries" ("organization_id", "actor_id", "created_at") `,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."audit_entries_organization_actor_created_idx"`);
  }
}
