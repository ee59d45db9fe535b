import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A2A push notification configs, one per (task, id), and their deliveries as rows of webhook_deliveries,
 * so the webhook worker delivers them (durable, retried, through the outbound policy): a delivery is for
 * a webhook and an outbox event, or for a push config and a task's status event. A trigger writes one
 * delivery per config of the task in the statement that writes the status event: each status change
 * after a config exists, once (the unique key). No foreign keys: webhook_deliveries is loaded by every
 * module that records events, without the A2A module's entities; a delivery whose config or task is gone
 * ends at its next attempt (A2aPushDeliveries), and nothing is queued for a config deleted since.
 */
export class A2aPushConfigs1796240000000 implements MigrationInterface {
  name = 'A2aPushConfigs1796240000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE TABLE "a2a_push_configs" (
      "task_id" text NOT NULL,
      "id" text NOT NULL,
      "organization_id" text NOT NULL,
      "url" text NOT NULL,
      "sealed_token" text,
      "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(),
      PRIMARY KEY ("task_id", "id"))`);
    await queryRunner.query(`ALTER TABLE "webhook_deliveries"
      ALTER COLUMN "webhook_id" DROP NOT NULL,
      ALTER COLUMN "event_id" DROP NOT NULL,
      ADD "a2a_task_id" text,
      ADD "a2a_push_config_id" text,
      ADD "a2a_event_seq" integer,
      ADD CONSTRAINT "webhook_deliveries_target_check" CHECK (
        ("webhook_id" IS NOT NULL AND "event_id" IS NOT NULL AND "a2a_push_config_id" IS NULL)
        OR ("webhook_id" IS NULL AND "a2a_task_id" IS NOT NULL AND "a2a_push_config_id" IS NOT NULL
            AND "a2a_event_seq" IS NOT NULL))`);
    await queryRunner.query(`CREATE UNIQUE INDEX "webhook_deliveries_a2a_push_key"
      ON "webhook_deliveries" ("a2a_task_id", "a2a_push_config_id", "a2a_event_seq")
      WHERE "a2a_push_config_id" IS NOT NULL`);
    await queryRunner.query(`CREATE FUNCTION gatehouse_a2a_push_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO webhook_deliveries (id, organization_id, event_type, status, attempts, next_attempt_at,
                                        a2a_task_id, a2a_push_config_id, a2a_event_seq)
          SELECT 'dlv_' || replace(gen_random_uuid()::text, '-', ''), c.organization_id, 'a2a.status_update',
                 'pending', 0, now(), c.task_id, c.id, NEW.seq
            FROM a2a_push_configs c WHERE c.task_id = NEW.task_id
          ON CONFLICT DO NOTHING;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`CREATE TRIGGER task_status_a2a_push AFTER INSERT ON task_events
      FOR EACH ROW WHEN (NEW.type = 'status') EXECUTE FUNCTION gatehouse_a2a_push_deliveries()`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER task_status_a2a_push ON task_events`);
    await queryRunner.query(`DROP FUNCTION gatehouse_a2a_push_deliveries()`);
    await queryRunner.query(`DELETE FROM webhook_deliveries WHERE a2a_push_config_id IS NOT NULL`);
    await queryRunner.query(`DROP INDEX "webhook_deliveries_a2a_push_key"`);
    await queryRunner.query(`ALTER TABLE "webhook_deliveries"
      DROP CONSTRAINT "webhook_deliveries_target_check",
      DROP COLUMN "a2a_event_seq", DROP COLUMN "a2a_push_config_id", DROP COLUMN "a2a_task_id",
      ALTER COLUMN "event_id" SET NOT NULL, ALTER COLUMN "webhook_id" SET NOT NULL`);
    await queryRunner.query(`DROP TABLE "a2a_push_configs"`);
  }
}
