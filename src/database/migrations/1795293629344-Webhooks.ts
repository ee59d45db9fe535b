import { MigrationInterface, QueryRunner } from "typeorm";

export class Webhooks1795293629344 implements MigrationInterface {
    name = 'Webhooks1795293629344'

    public async up(queryRunner: QueryRunner): Promise<void> {
        await queryRunner.query(`CREATE TABLE "webhook_deliveries" ("id" text NOT NULL, "organization_id" text NOT NULL, "webhook_id" text NOT NULL, "event_id" text NOT NULL, "event_type" text NOT NULL, "status" text NOT NULL DEFAULT 'pending', "attempts" integer NOT NULL DEFAULT '0', "next_attempt_at" TIMESTAMP(3) WITH TIME ZONE, "last_response_status" integer, "last_error" text, "delivered_at" TIMESTAMP(3) WITH TIME ZONE, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_535dd409947fb6d8fc6dfc0112a" PRIMARY KEY ("id"))`);
        await queryRunner.query(`CREATE UNIQUE INDEX "webhook_deliveries_event_webhook_key" ON "webhook_deliveries" ("event_id", "webhook_id") `);
        await queryRunner.query(`CREATE INDEX "webhook_deliveries_due_idx" ON "webhook_deliveries" ("next_attempt_at") WHERE status = 'pending'`);
        await queryRunner.query(`CREATE INDEX "webhook_deliveries_webhook_created_idx" ON "webhook_deliveries" ("webhook_id", "created_at") `);
        await queryRunner.query(`CREATE TABLE "webhooks" ("id" text NOT NULL, "organization_id" text NOT NULL, "url" text NOT NULL, "events" text array NOT NULL, "description" text, "enabled" boolean NOT NULL DEFAULT true, "sealed_secret" text NOT NULL, "consecutive_failures" integer NOT NULL DEFAULT '0', "disabled_at" TIMESTAMP(3) WITH TIME ZONE, "disabled_reason" text, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_9e8795cfc899ab7bdaa831e8527" PRIMARY KEY ("id"))`);
        await queryRunner.query(`CREATE INDEX "webhooks_organization_created_idx" ON "webhooks" ("organization_id", "created_at") `);
        await queryRunner.query(`ALTER TABLE "events" ADD "dispatched_at" TIMESTAMP(3) WITH TIME ZONE`);
        await queryRunner.query(`CREATE INDEX "events_undispatched_idx" ON "events" ("created_at") WHERE dispatched_at IS NULL`);
    }

    public async down(queryRunner: QueryRunner): Promise<void> {
        await queryRunner.query(`DROP INDEX "public"."events_undispatched_idx"`);
        await queryRunner.query(`ALTER TABLE "events" DROP COLUMN "dispatched_at"`);
        await queryRunner.query(`DROP INDEX "public"."webhooks_organization_created_idx"`);
        await queryRunner.query(`DROP TABLE "webhooks"`);
        await queryRunner.query(`DROP INDEX "public"."webhook_deliveries_webhook_created_idx"`);
        await queryRunner.query(`DROP INDEX "public"."webhook_deliveries_due_idx"`);
        await queryRunner.query(`DROP INDEX "public"."webhook_deliveries_event_webhook_key"`);
        await queryRunner.query(`DROP TABLE "webhook_deliveries"`);
    }

}
