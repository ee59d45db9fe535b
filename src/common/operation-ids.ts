/**
 * The OpenAPI document's operation ids: a generated client's method names (openapi-typescript's
 * `operations`, openapi-generator's methods), so they read as what the call does (`createApiKey`,
 * `listTasks`), not as Nest's default `ApiKeysController_create`. Given to SwaggerModule as its
 * `operationIdFactory`, the one place every route's id comes from, an extension's routes included.
 *
 * A controller's resource is its class name without `Controller`; `list` takes it as it is (plural),
 * every other method takes it singular after the method's name: `ApiKeysController.rotate` is
 * `rotateApiKey`, `DatasetsController.list` is `listDatasets`. A method that is not a verb on its
 * controller's resource is named in NAMED below. An id is a published name: changing one breaks the
 * clients that call it (test/openapi-operation-ids.e2e-spec.ts holds the reviewed list).
 */
const NAMED: Readonly<Record<string, string>> = {
  'HealthController.live': 'getLiveness',
  'HealthController.ready': 'getReadiness',
  'MetricsController.scrape': 'getMetrics',
  // A service checking a key it was sent (POST /v1/keys/verify), and a caller checking its own credential.
  'KeysVerifyController.verify': 'verifyApiKey',
  'VerifyController.verify': 'verifyCredential',
  'ApiKeysController.defaults': 'getApiKeyDefaults',
  'ApiKeysController.auditLog': 'listApiKeyAuditLog',
  'PermissionsController.catalogue': 'listPermissions',
  'TeamsController.addMember': 'addTeamMember',
  'TeamsController.removeMember': 'removeTeamMember',
  'AuthController.token': 'createAccessToken',
  'AuthController.signup': 'signUp',
  'DashboardSessionsController.signIn': 'createSession',
  'DashboardSessionsController.signOut': 'deleteSession',
  'DashboardSessionsController.refresh': 'refreshSession',
  'AuditController.list': 'listAuditLog',
  'AuditController.verify': 'verifyAuditLog',
  'UsageController.ofKey': 'getApiKeyUsage',
  'UsageController.ofIdentity': 'getIdentityUsage',
  'UsageController.ofOrganization': 'getUsage',
  'UsageController.seriesOfOrganization': 'getUsageSeries',
  'UsageController.ofGrant': 'getOAuthGrantUsage',
  'FilesController.content': 'downloadFile',
  'TasksController.events': 'listTaskEvents',
  'TasksController.postEvent': 'createTaskEvent',
  'WebhooksController.rotateSecret': 'rotateWebhookSecret',
  'WebhooksController.deliveries': 'listWebhookDeliveries',
  'WebhooksController.retry': 'retryWebhookDelivery',
  'OrganizationPoliciesController.get': 'getOrganizationPolicies',
  'OrganizationPoliciesController.update': 'updateOrganizationPolicies',
  'SecretScanningController.github': 'reportGithubSecretScanning',
  'SecretScanningController.revoke': 'revokeCredentials',
};

/** `Identities` → `Identity`, `ApiKeys` → `ApiKey`: the resource one route acts on. */
function singular(resource: string): string {
  if (resource.endsWith('ies')) return `${resource.slice(0, -3)}y`;
  return resource.endsWith('s') ? resource.slice(0, -1) : resource;
}

/** SwaggerDocumentOptions.operationIdFactory: see above. */
export function readableOperationId(controllerKey: string, methodKey: string): string {
  const named = NAMED[`${controllerKey}.${methodKey}`];
  if (named) return named;
  const resource = controllerKey.replace(/Controller$/, '');
  return methodKey === 'list' ? `list${resource}` : `${methodKey}${singular(resource)}`;
}
