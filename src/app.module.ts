import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import { AccessModule } from './access/access.module';
import { AccountsModule } from './accounts/accounts.module';
import { AgentsHttpModule } from './agents/agents-http.module';
import { ApiKeysModule } from './api-keys/api-keys.module';
import { AuditHttpModule } from './audit/audit-http.module';
import { AuthModule } from './auth/auth.module';
import { ProblemFilter } from './http/problem.filter';
import { createValidationPipe } from './common/validation';
import type { AppConfig } from './config/app-config';
import { ExtensionConfigModule } from './config/extension-config.module';
import { DashboardModule } from './dashboard-files/dashboard.module';
import { configsOf, type GatehouseExtension, httpModulesOf, sharedModulesOf } from './extension';
import { EXTENSIONS } from './extensions';
import { FilesHttpModule } from './files/files-http.module';
import { HealthModule } from './health/health.module';
import { ServiceIndexModule } from './health/service-index.module';
import { IdentitiesHttpModule } from './identities/identities-http.module';
import { AfterApiRoutes } from './http/after-api-routes';
import { McpModule } from './mcp/mcp.module';
import { A2aModule } from './a2a/a2a.module';
import { OAuthModule } from './oauth/oauth.module';
import { MetricsHttpModule } from './metrics/metrics-http.module';
import { OrganizationPoliciesHttpModule } from './organization-policies/organization-policies-http.module';
import { OrganizationSecretsHttpModule } from './organization-secrets/organization-secrets-http.module';
import { SecretScanningModule } from './secret-scanning/secret-scanning.module';
import { platformModules } from './platform.modules';
import { RolesModule } from './roles/roles.module';
import { SessionsModule } from './sessions/sessions.module';
import { TasksHttpModule } from './tasks/tasks-http.module';
import { UsageHttpModule } from './usage/usage-http.module';
import { WebhooksHttpModule } from './webhooks/webhooks-http.module';
import { LlmAgentsModule } from './llm-agents/llm-agents.module';

/**
 * The API process: the platform (platform.modules.ts), the feature modules with their controllers,
 * the dashboard's files (DashboardModule), and the key check (AccessModule, which registers the global
 * guards in the order src/access/access-check.ts declares). Feature modules with background work (tasks, webhooks) run it
 * here too unless configured off; WorkerModule runs the same work without any of the HTTP side.
 * `extensions`: the deployment's list (src/extensions.ts) unless a caller (a test) names its own; both
 * parts of each are loaded here, the worker loads the shared part only (src/extension.ts).
 */
@Module({})
export class AppModule {
  static forRoot(config: AppConfig, extensions: readonly GatehouseExtension[] = EXTENSIONS): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ...platformModules(config, extensions),
        // The extensions' declared configuration, beside the core's (src/config/extension-config.ts).
        ExtensionConfigModule.forRoot(config, configsOf(extensions)),
        // Express tries routes in registration order, each a path match: the hottest go first (health
        // probes, then the services' POST /v1/keys/verify, AccessModule's one route, then the key check's
        // GET /v1/auth/verify). Their paths overlap no other route, so only speed changes: POST
        // /v1/keys/verify came 79th of 91 layers when AccessModule was last. The global guards are
        // AccessModule's alone, so their order is unchanged.
        HealthModule,
        AccessModule,
        ApiKeysModule,
        IdentitiesHttpModule,
        RolesModule,
        AccountsModule,
        AuthModule,
        SessionsModule,
        AuditHttpModule,
        UsageHttpModule,
        FilesHttpModule,
        AgentsHttpModule,
        TasksHttpModule,
        // The llm agent type, on every server (CONTRACT, "Model agents"), in both processes.
        LlmAgentsModule,
        WebhooksHttpModule,
        OrganizationPoliciesHttpModule,
        OrganizationSecretsHttpModule,
        SecretScanningModule,
        McpModule,
        A2aModule,
        OAuthModule,
        MetricsHttpModule,
        // GET /: read by people, not on any request's path.
        ServiceIndexModule,
        ...sharedModulesOf(extensions),
        ...httpModulesOf(extensions),
        DashboardModule,
      ],
      providers: [
        { provide: APP_PIPE, useFactory: createValidationPipe },
        { provide: APP_FILTER, useClass: ProblemFilter },
        AfterApiRoutes,
      ],
    };
  }
}
