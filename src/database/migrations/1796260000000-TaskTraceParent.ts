import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A task keeps the W3C traceparent of the request that made it (with tracing on), so that its run, in
 * whichever process, continues that request's trace.
 */
export class TaskTraceParent1796260000000 implements MigrationInterface {
  name = 'TaskTraceParent1796260000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "tasks" ADD "trace_parent" text`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "tasks" DROP COLUMN "trace_parent"`);
  }
}
