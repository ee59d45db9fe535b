import { MigrationInterface, QueryRunner } from "typeorm";

export class AgentsTasksFiles1795293424707 implements MigrationInterface {
    name = 'AgentsTasksFiles1795293424707'

    public async up(queryRunner: QueryRunner): Promise<void> {
        await queryRunner.query(`CREATE TABLE "agents" ("id" text NOT NULL, "organization_id" text NOT NULL, "name" text NOT NULL, "type" text NOT NULL, "description" text, "config" jsonb NOT NULL DEFAULT '{}', "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_9c653f28ae19c5884d5baf6a1d9" PRIMARY KEY ("id"))`);
        await queryRunner.query(`CREATE INDEX "agents_organization_created_idx" ON "agents" ("organization_id", "created_at") `);
        await queryRunner.query(`CREATE TABLE "files" ("id" text NOT NULL, "organization_id" text NOT NULL, "filename" text NOT NULL, "content_type" text NOT NULL, "size" bigint NOT NULL, "sha256" text NOT NULL, "purpose" text, "storage_key" text NOT NULL, "created_by" text, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_6c16b9093a142e0e7613b04a3d9" PRIMARY KEY ("id"))`);
        await queryRunner.query(`CREATE INDEX "files_organization_created_idx" ON "files" ("organization_id", "created_at") `);
        await queryRunner.query(`CREATE TABLE "tasks" ("id" text NOT NULL, "organization_id" text NOT NULL, "instruction" text NOT NULL, "agent_type" text NOT NULL, "agent_id" text, "attachments" text array NOT NULL DEFAULT '{}', "status" text NOT NULL DEFAULT 'queued', "result" jsonb, "error" jsonb, "attempts" integer NOT NULL DEFAULT '0', "max_attempts" integer NOT NULL, "run_after" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "lease_owner" text, "lease_expires_at" TIMESTAMP(3) WITH TIME ZONE, "idempotency_key" text, "sealed_credential" text, "created_by" text, "started_at" TIMESTAMP(3) WITH TIME ZONE, "completed_at" TIMESTAMP(3) WITH TIME ZONE, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_8d12ff38fcc62aaba2cab748772" PRIMARY KEY ("id"))`);
        await queryRunner.query(`CREATE UNIQUE INDEX "tasks_idempotency_key" ON "tasks" ("organization_id", "idempotency_key") WHERE idempotency_key IS NOT NULL`);
        await queryRunner.query(`CREATE INDEX "tasks_lease_idx" ON "tasks" ("lease_expires_at") WHERE status = 'running'`);
        await queryRunner.query(`CREATE INDEX "tasks_claimable_idx" ON "tasks" ("run_after") WHERE status = 'queued'`);
        await queryRunner.query(`CREATE INDEX "tasks_organization_created_idx" ON "tasks" ("organization_id", "created_at") `);
    }

    public async down(queryRunner: QueryRunner): Promise<void> {
        await queryRunner.query(`DROP INDEX "public"."tasks_organization_created_idx"`);
        await queryRunner.query(`DROP INDEX "public"."tasks_claimable_idx"`);
        await queryRunner.query(`DROP INDEX "public"."tasks_lease_idx"`);
        await queryRunner.query(`DROP INDEX "public"."tasks_idempotency_key"`);
        await queryRunner.query(`DROP TABLE "tasks"`);
        await queryRunner.query(`DROP INDEX "public"."files_organization_created_idx"`);
        await queryRunner.query(`DROP TABLE "files"`);
        await queryRunner.query(`DROP INDEX "public"."agents_organization_created_idx"`);
        await queryRunner.query(`DROP TABLE "agents"`);
    }

}
