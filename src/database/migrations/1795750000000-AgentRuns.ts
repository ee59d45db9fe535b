import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Agent runs (CONTRACT, "Agent runs"): task tokens, the events agents post, output files and what a run
 * used and cost.
 *
 * - `task_tokens`: one row per attempt of a task whose runner calls out, keyed by the SHA-256 of the
 *   token (the token itself is never stored). A token is live only while its task is running under the
 *   same attempt and lease owner it was minted for; the row outlives that so a late call is told
 *   `task_token_expired`, not `invalid_credentials`.
 * - `tasks` gains the last `progress`, the reported token counts, `max_credits`, the agent's pricing as
 *   it was when the task was created, `credits_charged` once the run is settled, and `output_files`
 *   (kept by the triggers below, so reading a task needs no second query); a task created with a key
 *   that has credits keeps where its `max_credits` were reserved (`credit_reservation`) and, once
 *   settled, what it gave back (`credits_refund`; `credits_refund_state` pending while Redis still owes
 *   it, done after).
 * - `agents` gain `pricing` (credits per 1,000 input and output tokens; null: free) and
 *   `default_max_credits` (what a task of the agent reserves when it names no max_credits).
 * - `files.task_id`: an output file of a task. Inserting one writes its `file` event through a trigger in
 *   the same statement, numbered like every other event of the task, and only while the task runs.
 * - Events inserted by the API (progress, output, usage, file) notify `gatehouse_task_events` as status
 *   changes already do (TaskEvents migration), so streams on every instance wake for them.
 */
export class AgentRuns1795750000000 implements MigrationInterface {
  name = 'AgentRuns1795750000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE TABLE "task_tokens" (
      "token_hash" text NOT NULL PRIMARY KEY,
      "task_id" text NOT NULL REFERENCES "tasks"("id") ON DELETE CASCADE,
      "attempt" integer NOT NULL,
      "lease_owner" text NOT NULL,
      "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now())`);
    await queryRunner.query(`CREATE INDEX "task_tokens_task_idx" ON "task_tokens" ("task_id")`);
    await queryRunner.query(`ALTER TABLE "tasks"
      ADD "progress" jsonb,
      ADD "input_tokens" bigint NOT NULL DEFAULT 0,
      ADD "output_tokens" bigint NOT NULL DEFAULT 0,
      ADD "max_credits" integer NOT NULL DEFAULT 0,
      ADD "credits_per_1k_input_tokens" double precision NOT NULL DEFAULT 0,
      ADD "credits_per_1k_output_tokens" double precision NOT NULL DEFAULT 0,
      ADD "credits_charged" integer,
      ADD "output_files" jsonb NOT NULL DEFAULT '[]',
      ADD "credit_reservation" jsonb,
      ADD "credits_refund" integer,
      ADD "credits_refund_state" text`);
    await queryRunner.query(
      `CREATE INDEX "tasks_refund_pending_idx" ON "tasks" ("completed_at") WHERE "credits_refund_state" = 'pending'`,
    );
    await queryRunner.query(`ALTER TABLE "agents" ADD "pricing" jsonb, ADD "default_max_credits" integer`);
    await queryRunner.query(
      `ALTER TABLE "files" ADD "task_id" text REFERENCES "tasks"("id") ON DELETE SET NULL`,
    );
    await queryRunner.query(`CREATE INDEX "files_task_idx" ON "files" ("task_id") WHERE "task_id" IS NOT NULL`);

    await queryRunner.query(`CREATE FUNCTION gatehouse_task_event_notify() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('gatehouse_task_events', NEW.task_id);
        RETURN NULL;
      END $$`);
    // Status events notify from their own trigger (TaskEvents); this one covers every other type.
    await queryRunner.query(`CREATE TRIGGER task_event_posted AFTER INSERT ON task_events
      FOR EACH ROW WHEN (NEW.type <> 'status') EXECUTE FUNCTION gatehouse_task_event_notify()`);

    // SQLSTATE GT001: the task of an output file is no longer running (FilesService answers
    // task_token_expired, and the insert, with its event, did not happen).
    await queryRunner.query(`CREATE FUNCTION gatehouse_task_output_file() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        next_seq integer;
        described jsonb := jsonb_build_object('id', NEW.id, 'filename', NEW.filename, 'size', NEW.size,
          'sha256', NEW.sha256);
      BEGIN
        UPDATE tasks SET event_seq = event_seq + 1, output_files = output_files || jsonb_build_array(described)
          WHERE id = NEW.task_id AND status = 'running'
          RETURNING event_seq INTO next_seq;
        IF NOT FOUND THEN
          RAISE EXCEPTION 'task % is not running', NEW.task_id USING ERRCODE = 'GT001';
        END IF;
        INSERT INTO task_events (task_id, seq, type, data) VALUES (NEW.task_id, next_seq, 'file', described);
        RETURN NULL;
      END $$`);
    await queryRunner.query(`CREATE TRIGGER task_output_file AFTER INSERT ON files
      FOR EACH ROW WHEN (NEW.task_id IS NOT NULL) EXECUTE FUNCTION gatehouse_task_output_file()`);
    // A deleted output file leaves its task's list (its event stays: it happened).
    await queryRunner.query(`CREATE FUNCTION gatehouse_task_output_file_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE tasks SET output_files = COALESCE((SELECT jsonb_agg(f) FROM jsonb_array_elements(output_files) f
                                                   WHERE f->>'id' <> OLD.id), '[]')
          WHERE id = OLD.task_id;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`CREATE TRIGGER task_output_file_deleted AFTER DELETE ON files
      FOR EACH ROW WHEN (OLD.task_id IS NOT NULL) EXECUTE FUNCTION gatehouse_task_output_file_deleted()`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER task_output_file_deleted ON files`);
    await queryRunner.query(`DROP FUNCTION gatehouse_task_output_file_deleted()`);
    await queryRunner.query(`DROP TRIGGER task_output_file ON files`);
    await queryRunner.query(`DROP FUNCTION gatehouse_task_output_file()`);
    await queryRunner.query(`DROP TRIGGER task_event_posted ON task_events`);
    await queryRunner.query(`DROP FUNCTION gatehouse_task_event_notify()`);
    await queryRunner.query(`DROP INDEX "tasks_refund_pending_idx"`);
    await queryRunner.query(`DROP INDEX "files_task_idx"`);
    await queryRunner.query(`ALTER TABLE "files" DROP COLUMN "task_id"`);
    await queryRunner.query(`ALTER TABLE "tasks" DROP COLUMN "progress", DROP COLUMN "input_tokens",
      DROP COLUMN "output_tokens", DROP COLUMN "max_credits", DROP COLUMN "credits_per_1k_input_tokens",
      DROP COLUMN "credits_per_1k_output_tokens", DROP COLUMN "credits_charged", DROP COLUMN "output_files", DROP COLUMN "credit_reservation",
      DROP COLUMN "credits_refund", DROP COLUMN "credits_refund_state"`);
    await queryRunner.query(`ALTER TABLE "agents" DROP COLUMN "pricing", DROP COLUMN "default_max_credits"`);
    await queryRunner.query(`DROP TABLE "task_tokens"`);
  }
}
