import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A task made over A2A keeps the conversation it belongs to (A2A's `contextId`, the one the client sent
 * or a new one), listable by it within the organization (ListTasks).
 */
export class A2aContexts1796230000000 implements MigrationInterface {
  name = 'A2aContexts1796230000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "tasks" ADD "context_id" text`);
    await queryRunner.query(
      `CREATE INDEX "tasks_organization_context_idx" ON "tasks" ("organization_id", "context_id", "created_at") WHERE "context_id" IS NOT NULL`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "tasks_organization_context_idx"`);
    await queryRunner.query(`ALTER TABLE "tasks" DROP COLUMN "context_id"`);
  }
}
