import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * NOTIFY gatehouse_tasks after every statement that queues tasks, so workers in other processes wake
 * at once (src/tasks/task-wakeups.ts). In the INSERT's own transaction: delivered only on commit, and
 * no extra round trip for the request that queues.
 */
export class TaskQueuedNotify1795400000000 implements MigrationInterface {
  name = 'TaskQueuedNotify1795400000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE FUNCTION gatehouse_tasks_queued() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('gatehouse_tasks', '');
        RETURN NULL;
      END $$`);
    await queryRunner.query(
      `CREATE TRIGGER tasks_queued AFTER INSERT ON tasks FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_tasks_queued()`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER tasks_queued ON tasks`);
    await queryRunner.query(`DROP FUNCTION gatehouse_tasks_queued()`);
  }
}
