import { Module, OnModuleInit } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { AgentsModule } from '../agents/agents.module';
import { FileStorageModule } from '../files/storage/file-storage.module';
import { OrganizationSecrets } from '../organization-secrets/organization-secrets';
import { OrganizationSecretsModule } from '../organization-secrets/organization-secrets.module';
import { SecretReferences } from '../organization-secrets/secret-references';
import { LlmRunner } from './llm.runner';
import { PROVIDER_SECRETS } from './provider-secrets';

/**
 * The `llm` agent type, shaped as an extension (a module of its own, beside AgentsModule's registry) but
 * loaded by AppModule and WorkerModule themselves: the contract promises it on every server, so it is
 * not left to the deployment's extension list.
 */
@Module({
  imports: [AgentsModule, FileStorageModule, OrganizationSecretsModule],
  providers: [LlmRunner, { provide: PROVIDER_SECRETS, useExisting: OrganizationSecrets }],
})
export class LlmAgentsModule implements OnModuleInit {
  constructor(
    private readonly references: SecretReferences,
    private readonly dataSource: DataSource,
  ) {}

  /**
   * A secret an llm agent of its organization names cannot be deleted (409 secret_in_use). Asked inside
   * the deletion's transaction: the query runs on its manager when the caller passes one (on the embedded
   * database, one connection, a query beside the transaction would wait for it).
   */
  onModuleInit(): void {
    this.references.register(async (organizationId, secretId, manager?: EntityManager) => {
      const rows = await (manager ?? this.dataSource).query<unknown[]>(
        `SELECT 1 FROM agents WHERE organization_id = $1 AND type = 'llm' AND config->>'secret_id' = $2 LIMIT 1`,
        [organizationId, secretId],
      );
      return rows.length > 0;
    });
  }
}
