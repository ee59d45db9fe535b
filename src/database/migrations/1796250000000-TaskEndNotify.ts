import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Only a task's end (succeeded, failed, cancelled) notifies the bare task id; its other status changes
 * (queued, running) notify `<task id> events`, as its output does (TaskChanges). A wait for the end and a
 * worker watching for its run's cancellation are then not woken, to read the task again, by the task
 * starting. An instance not upgraded yet hears the start as an event, which wakes its event streams as
 * before and none of its waits, which wanted the end only.
 */
export class TaskEndNotify1796250000000 implements MigrationInterface {
  name = 'TaskEndNotify1796250000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE OR REPLACE FUNCTION gatehouse_task_status_event() RETURNS trigger
      LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO task_events (task_id, seq, type, data)
          VALUES (NEW.id, NEW.event_seq, 'status', jsonb_build_object('status', NEW.status));
        PERFORM pg_notify('gatehouse_task_events',
          CASE WHEN NEW.status IN ('queued', 'running') THEN NEW.id || ' events' ELSE NEW.id END);
        RETURN NULL;
      END $$`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE OR REPLACE FUNCTION gatehouse_task_status_event() RETURNS trigger
      LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO task_events (task_id, seq, type, data)
          VALUES (NEW.id, NEW.event_seq, 'status', jsonb_build_object('status', NEW.status));
        PERFORM pg_notify('gatehouse_task_events', NEW.id);
        RETURN NULL;
      END $$`);
  }
}
