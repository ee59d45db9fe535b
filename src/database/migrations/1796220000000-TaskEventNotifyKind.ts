import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A task event that is not a status change notifies `<task id> events` instead of the bare id
 * (TaskChanges): a wait for a task's end and a worker watching for its cancellation are woken by status
 * changes only, not by every output delta of a model's stream. An instance not upgraded yet hears such a
 * payload as no task of its own: its event streams see those events at their next recheck (within a
 * second) until it is.
 */
export class TaskEventNotifyKind1796220000000 implements MigrationInterface {
  name = 'TaskEventNotifyKind1796220000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE OR REPLACE FUNCTION gatehouse_task_event_notify() RETURNS trigger
      LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('gatehouse_task_events', NEW.task_id || ' events');
        RETURN NULL;
      END $$`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE OR REPLACE FUNCTION gatehouse_task_event_notify() RETURNS trigger
      LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('gatehouse_task_events', NEW.task_id);
        RETURN NULL;
      END $$`);
  }
}
