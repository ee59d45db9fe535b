import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The projects table, as TypeORM generates it for the entity (projects.e2e-spec.ts checks that it finds
 * nothing left to change). Listed in the extension's descriptor, not in src/database/migrations/index.ts:
 * the app runs it with the core's migrations where the extension is loaded. The class name (with its
 * timestamp) is how TypeORM records it as run, so it must be unique across Gatehouse and every extension.
 */
export class Projects1796186586573 implements MigrationInterface {
  name = 'Projects1796186586573';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "projects" ("id" text NOT NULL, "organization_id" text NOT NULL, "name" text NOT NULL, "description" text, "created_by" text, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_6271df0a7aed1d6c0691ce6ac50" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "projects_organization_created_idx" ON "projects" ("organization_id", "created_at") `,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "projects_organization_name_key" ON "projects" ("organization_id", "name") `,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."projects_organization_name_key"`);
    await queryRunner.query(`DROP INDEX "public"."projects_organization_created_idx"`);
    await queryRunner.query(`DROP TABLE "projects"`);
  }
}
