import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A task's events (GET /v1/tasks/{id}/events), numbered 1, 2, 3, … within the task (`seq`, the stream's
 * `id:`). Status changes are events too, written by triggers in the statement that changes the status, so
 * no code path can change one without its event: `tasks.event_seq` holds the task's last number (a BEFORE
 * trigger counts it up, under the row lock the change holds, so two changes never take one number), an
 * AFTER trigger writes the event and notifies `gatehouse_task_events` with the task id (delivered at
 * commit; src/tasks/task-changes.ts wakes the requests that wait on the task). A task that exists already
 * starts with one event, its status now.
 */
export class TaskEvents1795740000000 implements MigrationInterface {
  name = 'TaskEvents1795740000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "tasks" ADD "event_seq" integer NOT NULL DEFAULT 0`);
    await queryRunner.query(`CREATE TABLE "task_events" (
      "task_id" text NOT NULL REFERENCES "tasks"("id") ON DELETE CASCADE,
      "seq" integer NOT NULL,
      "type" text NOT NULL,
      "data" jsonb NOT NULL,
      "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(),
      PRIMARY KEY ("task_id", "seq"))`);
    await queryRunner.query(`INSERT INTO "task_events" ("task_id", "seq", "type", "data", "created_at")
      SELECT "id", 1, 'status', jsonb_build_object('status', "status"), "updated_at" FROM "tasks"`);
    await queryRunner.query(`UPDATE "tasks" SET "event_seq" = 1`);
    await queryRunner.query(`CREATE FUNCTION gatehouse_task_status_seq() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          NEW.event_seq := 1;
        ELSIF NEW.status IS DISTINCT FROM OLD.status THEN
          NEW.event_seq := OLD.event_seq + 1;
        END IF;
        RETURN NEW;
      END $$`);
    await queryRunner.query(`CREATE FUNCTION gatehouse_task_status_event() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO task_events (task_id, seq, type, data)
          VALUES (NEW.id, NEW.event_seq, 'status', jsonb_build_object('status', NEW.status));
        PERFORM pg_notify('gatehouse_task_events', NEW.id);
        RETURN NULL;
      END $$`);
    await queryRunner.query(`CREATE TRIGGER task_status_seq BEFORE INSERT OR UPDATE OF status ON tasks
      FOR EACH ROW EXECUTE FUNCTION gatehouse_task_status_seq()`);
    await queryRunner.query(`CREATE TRIGGER task_status_inserted AFTER INSERT ON tasks
      FOR EACH ROW EXECUTE FUNCTION gatehouse_task_status_event()`);
    await queryRunner.query(`CREATE TRIGGER task_status_changed AFTER UPDATE OF status ON tasks
      FOR EACH ROW WHEN (NEW.status IS DISTINCT FROM OLD.status) EXECUTE FUNCTION gatehouse_task_status_event()`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER task_status_changed ON tasks`);
    await queryRunner.query(`DROP TRIGGER task_status_inserted ON tasks`);
    await queryRunner.query(`DROP TRIGGER task_status_seq ON tasks`);
    await queryRunner.query(`DROP FUNCTION gatehouse_task_status_event()`);
    await queryRunner.query(`DROP FUNCTION gatehouse_task_status_seq()`);
    await queryRunner.query(`DROP TABLE "task_events"`);
    await queryRunner.query(`ALTER TABLE "tasks" DROP COLUMN "event_seq"`);
  }
}
