import { MigrationInterface, QueryRunner } from "typeorm";

export class ApiKeysRolesAudit1795291284857 implements MigrationInterface {
    name = 'ApiKeysRolesAudit1795291284857'

    public async up(queryRunner: QueryRunner): Promise<void> {
        await queryRunner.query(`CREATE TABLE "api_keys" ("id" text NOT NULL, "organization_id" text NOT NULL, "name" text NOT NULL, "description" text, "role" text NOT NULL, "type" text NOT NULL, "owner_id" text, "team_id" text, "key_hash" text NOT NULL, "start" text NOT NULL, "previous_key_hash" text, "previous_key_expires_at" TIMESTAMP(3) WITH TIME ZONE, "previous_key_last_used_at" TIMESTAMP(3) WITH TIME ZONE, "expiration" TIMESTAMP(3) WITH TIME ZONE, "expiry_recorded_at" TIMESTAMP(3) WITH TIME ZONE, "revoked_at" TIMESTAMP(3) WITH TIME ZONE, "revoked_reason" text, "deleted_at" TIMESTAMP(3) WITH TIME ZONE, "last_used_at" TIMESTAMP(3) WITH TIME ZONE, "last_rotated_at" TIMESTAMP(3) WITH TIME ZONE, "rotation_enabled" boolean NOT NULL DEFAULT false, "rotation_days" integer, "rotation_grace_seconds" integer NOT NULL DEFAULT '0', "next_rotation_at" TIMESTAMP(3) WITH TIME ZONE, "allowed_referrers" text array NOT NULL DEFAULT '{}', "allowed_ips" text array NOT NULL DEFAULT '{}', "rate_limit_per_minute" integer, "rate_limit_per_hour" integer, "hide_credentials" boolean NOT NULL DEFAULT false, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_5c8a79801b44bd27b79228e1dad" PRIMARY KEY ("id"))`);
        await queryRunner.query(`CREATE UNIQUE INDEX "api_keys_key_hash_key" ON "api_keys" ("key_hash") `);
        await queryRunner.query(`CREATE UNIQUE INDEX "api_keys_previous_key_hash_key" ON "api_keys" ("previous_key_hash") WHERE previous_key_hash IS NOT NULL`);
        await queryRunner.query(`CREATE INDEX "api_keys_owner_idx" ON "api_keys" ("owner_id") `);
        await queryRunner.query(`CREATE INDEX "api_keys_organization_created_idx" ON "api_keys" ("organization_id", "created_at") `);
        await queryRunner.query(`CREATE TABLE "audit_entries" ("id" text NOT NULL, "sequence" BIGSERIAL NOT NULL, "organization_id" text NOT NULL, "key_id" text, "action" text NOT NULL, "actor_type" text NOT NULL, "actor_id" text, "ip" text, "user_agent" text, "details" jsonb NOT NULL DEFAULT '{}', "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "previous_hash" text NOT NULL, "hash" text NOT NULL, CONSTRAINT "PK_6b1623bcad4d04530b76548d619" PRIMARY KEY ("id"))`);
        await queryRunner.query(`CREATE INDEX "audit_entries_organization_sequence_idx" ON "audit_entries" ("organization_id", "sequence") `);
        await queryRunner.query(`CREATE INDEX "audit_entries_key_created_idx" ON "audit_entries" ("key_id", "created_at") `);
        await queryRunner.query(`CREATE INDEX "audit_entries_organization_created_idx" ON "audit_entries" ("organization_id", "created_at") `);
        await queryRunner.query(`CREATE TABLE "custom_roles" ("id" text NOT NULL, "organization_id" text NOT NULL, "role_name" text NOT NULL, "permissions" text array NOT NULL, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_7b337026aed161643793aad5299" PRIMARY KEY ("id"))`);
        await queryRunner.query(`CREATE UNIQUE INDEX "custom_roles_organization_name_key" ON "custom_roles" ("organization_id", "role_name") `);
    }

    public async down(queryRunner: QueryRunner): Promise<void> {
        await queryRunner.query(`DROP INDEX "public"."custom_roles_organization_name_key"`);
        await queryRunner.query(`DROP TABLE "custom_roles"`);
        await queryRunner.query(`DROP INDEX "public"."audit_entries_organization_created_idx"`);
        await queryRunner.query(`DROP INDEX "public"."audit_entries_key_created_idx"`);
        await queryRunner.query(`DROP INDEX "public"."audit_entries_organization_sequence_idx"`);
        await queryRunner.query(`DROP TABLE "audit_entries"`);
        await queryRunner.query(`DROP INDEX "public"."api_keys_organization_created_idx"`);
        await queryRunner.query(`DROP INDEX "public"."api_keys_owner_idx"`);
        await queryRunner.query(`DROP INDEX "public"."api_keys_previous_key_hash_key"`);
        await queryRunner.query(`DROP INDEX "public"."api_keys_key_hash_key"`);
        await queryRunner.query(`DROP TABLE "api_keys"`);
    }

}
