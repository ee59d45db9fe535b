import { MigrationInterface, QueryRunner } from "typeorm";

export class KeyPoliciesOutbox1795292400954 implements MigrationInterface {
    name = 'KeyPoliciesOutbox1795292400954'

    public async up(queryRunner: QueryRunner): Promise<void> {
        await queryRunner.query(`CREATE TABLE "events" ("id" text NOT NULL, "organization_id" text NOT NULL, "type" text NOT NULL, "data" jsonb NOT NULL, "sealed_secret" text, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_40731c7151fe4be3116e45ddf73" PRIMARY KEY ("id"))`);
        await queryRunner.query(`CREATE INDEX "events_organization_created_idx" ON "events" ("organization_id", "created_at") `);
        await queryRunner.query(`ALTER TABLE "api_keys" ADD "expiry_warned_at" TIMESTAMP(3) WITH TIME ZONE`);
        await queryRunner.query(`CREATE INDEX "api_keys_expiration_idx" ON "api_keys" ("expiration") WHERE expiration IS NOT NULL`);
        await queryRunner.query(`CREATE INDEX "api_keys_next_rotation_idx" ON "api_keys" ("next_rotation_at") WHERE rotation_enabled`);
    }

    public async down(queryRunner: QueryRunner): Promise<void> {
        await queryRunner.query(`DROP INDEX "public"."api_keys_next_rotation_idx"`);
        await queryRunner.query(`DROP INDEX "public"."api_keys_expiration_idx"`);
        await queryRunner.query(`ALTER TABLE "api_keys" DROP COLUMN "expiry_warned_at"`);
        await queryRunner.query(`DROP INDEX "public"."events_organization_created_idx"`);
        await queryRunner.query(`DROP TABLE "events"`);
    }

}
