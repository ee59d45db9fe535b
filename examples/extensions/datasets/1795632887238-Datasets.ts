import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The datasets table, as `npm run migration:generate` writes it for the entity (datasets.e2e-spec.ts
 * checks that TypeORM finds nothing left to change). Listed in the extension's descriptor, not in
 * src/database/migrations/index.ts: the app runs it with the core's migrations where the extension is
 * loaded. The class name (with its timestamp) is how TypeORM
 * records it as run, so it must be unique across Gatehouse and every extension.
 */
export class Datasets1795632887238 implements MigrationInterface {
  name = 'Datasets1795632887238';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "datasets" ("id" text NOT NULL, "organization_id" text NOT NULL, "name" text NOT NULL, "description" text, "created_by" text, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_1bf831e43c559a240303e23d038" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "datasets_organization_created_idx" ON "datasets" ("organization_id", "created_at") `,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."datasets_organization_created_idx"`);
    await queryRunner.query(`DROP TABLE "datasets"`);
  }
}
