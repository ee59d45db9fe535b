import { permissionSchemas } from './roles/permission-schemas';
import type { INestApplication } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, type OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { bodyParsers } from './common/body-parsers';
import { isMcpRequest, mcpRequests } from './mcp/mcp-http';
import { AgentRunners } from './agents/agent-runner';
import { AfterApiRoutes } from './http/after-api-routes';
import { declaredRoutes, methodNotAllowed } from './http/method-not-allowed';
import { rememberClientAddressPerConnection } from './http/client-address';
import { enumerateProperty, finishOpenApiDocument, OPERATOR_SCHEME, ProblemSchema } from './common/openapi';
import { readableOperationId } from './common/operation-ids';
import { SESSION_COOKIE, SESSION_COOKIE_SCHEME } from './sessions/session-cookie';
import { OAUTH_SCHEME, TASK_TOKEN_SCHEME } from './access/route-access.decorators';
import { allPermissions } from './roles/permissions';
import { extensionDenialCodes } from './access/access-denial';
import { VERIFY_KEY_CODES } from './api-keys/dto/verify-key.dto';
import { AuditActions, describeAuditActions } from './audit/audit-actions';
import { describeWebhookEventTypes, WebhookEventTypes } from './webhooks/webhook-event-types';
import { requestObserver } from './common/request-context';
import { ConfigOf } from './config/config-namespace';
import { httpConfig, mcpConfig } from './config/namespaces';
import { AppLogger } from './logging/app-logger';
import { REQUEST_LOGGER, requestLogger } from './logging/request-logger';
import { MetricsService } from './metrics/metrics.service';
import type pino from 'pino';

/** Nest's own parsers are off (see bodyParsers) so body errors get precise problem codes. */
export const APP_OPTIONS = { bufferLogs: true, bodyParser: false } as const;

/** 1 MiB, what body-parser's '1mb' is. */
const JSON_BODY_LIMIT = 1_048_576;

/**
 * Everything main.ts does to the app besides listening, shared with the e2e tests so they exercise the
 * same pipeline: request ids first, metrics, logging, body limits, OpenAPI.
 */
export function configureApp(app: INestApplication): void {
  const express = app as NestExpressApplication;
  express.use(
    requestObserver([
      app.get(MetricsService).recordRequest,
      requestLogger(app.get<pino.Logger>(REQUEST_LOGGER)),
    ]),
  );
  express.useLogger(app.get(AppLogger));
  express.disable('x-powered-by');
  // API responses are not conditionally cached; an ETag would cost a hash of every body.
  express.set('etag', false);
  // Decides request.ip: which X-Forwarded-For hops to believe (none unless TRUST_PROXY says so).
  express.set('trust proxy', app.get<ConfigOf<typeof httpConfig>>(httpConfig.KEY).trustProxy);
  rememberClientAddressPerConnection(express.getHttpAdapter().getInstance());
  const apiBodies = bodyParsers(JSON_BODY_LIMIT);
  // /mcp checks the Origin and takes bodies of upload_file's size (mcp-http.ts), in this same layer.
  const mcpBodies = mcpRequests(app.get<ConfigOf<typeof mcpConfig>>(mcpConfig.KEY));
  express.use((request: Request, response: Response, next: NextFunction) =>
    (isMcpRequest(request.originalUrl) ? mcpBodies : apiBodies)(request, response, next),
  );

  // Behind the API's routes, so that API requests do not pass its layers. A factory, built at the first
  // request: by then every module's onModuleInit has run (agent types are registered there).
  app.get(AfterApiRoutes).add(() =>
    SwaggerModule.setup('docs', app, () => createOpenApiDocument(app), {
      jsonDocumentUrl: 'openapi.json',
      yamlDocumentUrl: 'openapi.yaml',
    }),
  );
  // Last before Nest's 404: a known path asked with a method none of its routes takes is a 405.
  app.get(AfterApiRoutes).add(() => express.use(methodNotAllowed(declaredRoutes(app))));
}

const AGENT_TYPE_PROPERTIES: [string, string][] = [
  ['CreateAgentDto', 'type'],
  ['AgentResponse', 'type'],
  ['CreateTaskDto', 'agent_type'],
  ['TaskResponse', 'agent_type'],
];

/** The OpenAPI document of an initialised app: served at /openapi.json, linted in CI (npm run openapi). */
export function createOpenApiDocument(app: INestApplication): OpenAPIObject {
  // Declared at start by the modules that record them (an extension's too): this app's, not a fixed list.
  const webhookEventTypes = app.get(WebhookEventTypes);
  const document = finishOpenApiDocument(
    SwaggerModule.createDocument(
      app,
      new DocumentBuilder()
        .setOpenAPIVersion('3.1.0')
        .setTitle('Gatehouse')
        .setDescription(
          'API keys and programmatic access for a platform of AI agents. Errors are application/problem+json (RFC 9457).',
        )
        .setVersion('1')
        .setLicense('UNLICENSED (proprietary)', 'https://spdx.org/licenses/')
        .addServer('/', 'This server')
        .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'An API key or an access token' })
        .addApiKey({ type: 'apiKey', in: 'header', name: 'X-API-Key' }, 'X-API-Key')
        .addApiKey({ type: 'apiKey', in: 'query', name: 'api_key' }, 'api_key')
        .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'METRICS_TOKEN' }, OPERATOR_SCHEME)
        // A run's task token: only the routes that accept one list it (see TaskTokenAccess).
        .addBearerAuth(
          {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'gtt_…',
            description:
              'A task token (`gtt_…`): sent to an agent in X-Gatehouse-Task-Token, valid while its run lasts',
          },
          TASK_TOKEN_SCHEME,
        )
        // The dashboard's refresh cookie: only its own session routes accept it.
        .addCookieAuth(
          SESSION_COOKIE,
          { type: 'apiKey', in: 'cookie', description: 'The dashboard session (refresh) cookie' },
          SESSION_COOKIE_SCHEME,
        )
        // An OAuth access token of this service's authorization server, for the resource <PUBLIC_URL>/v1.
        .addOAuth2(
          {
            type: 'oauth2',
            description:
              'An OAuth 2.1 access token (authorization code with PKCE S256) issued for the resource `<PUBLIC_URL>/v1`',
            flows: {
              authorizationCode: {
                authorizationUrl: '/oauth/authorize',
                tokenUrl: '/oauth/token',
                refreshUrl: '/oauth/token',
                scopes: Object.fromEntries(allPermissions().map((permission) => [permission, permission])),
              },
            },
          },
          OAUTH_SCHEME,
        )
        // Any one of the four ways to present a credential; public operations say `security: []`.
        .addSecurityRequirements('bearer')
        .addSecurityRequirements('X-API-Key')
        .addSecurityRequirements('api_key')
        .addSecurityRequirements(OAUTH_SCHEME)
        .build(),
      {
        extraModels: [ProblemSchema, ...Object.values(webhookEventTypes.payloads())],
        // A generated client's method names: `createApiKey`, not Nest's `ApiKeysController_create`.
        operationIdFactory: readableOperationId,
      },
    ),
  );
  // Agent types are registered at start by any module: the document lists those of this app.
  const agentTypes = app.get(AgentRunners).types();
  document.components!.schemas = { ...document.components!.schemas, ...permissionSchemas() };
  for (const property of AGENT_TYPE_PROPERTIES) enumerateProperty(document, property, agentTypes);
  // Verify answers the key check's codes, those of the extensions' access policies among them.
  enumerateProperty(
    document,
    ['VerifyKeyResponse', 'code'],
    [...VERIFY_KEY_CODES, ...extensionDenialCodes()],
  );
  describeAuditActions(document, app.get(AuditActions));
  return describeWebhookEventTypes(document, webhookEventTypes);
}
