/**
 * What only the running server knows: the audit actions and webhook event types its modules declared at
 * start (AuditActions, WebhookEventTypes), an extension's among them. The generated client is built from
 * the core's document, so its unions name the core's values only; the server's own OpenAPI document
 * (`/openapi.json`, public) lists this server's, in its `AuditActionFilter` and `WebhookEventType` enums.
 */
import type { components } from '../../../clients/typescript/src/schema';
import { ApiError, NETWORK_PROBLEM } from './session';

type Schemas = components['schemas'];
/** A filter of `GET /v1/audit-log?action=`; the server may know more than the client's union names. */
export type AuditActionFilter = Schemas['AuditActionFilter'];
/** An event a webhook endpoint subscribes to; as above, the server's list is the one that counts. */
export type WebhookEventType = Schemas['WebhookEventType'];

type Vocabulary = 'AuditActionFilter' | 'WebhookEventType';

let document: Promise<{ components: { schemas: Record<string, { enum?: string[] }> } }> | undefined;

/** The document once per page load; a failed load is asked again next time. */
function serverDocument(): NonNullable<typeof document> {
  document ??= fetch('/openapi.json', { credentials: 'omit' }).then(
    (response) => {
      if (!response.ok) throw new ApiError({ title: 'Error', detail: 'The API description did not load.' });
      return response.json();
    },
    () => {
      throw new ApiError(NETWORK_PROBLEM);
    },
  );
  document.catch(() => (document = undefined));
  return document;
}

async function valuesOf(schema: Vocabulary): Promise<string[]> {
  return (await serverDocument()).components.schemas[schema]?.enum ?? [];
}

/**
 * Every filter the audit log takes, each group (`user.*`) before its own actions. Typed as the client's
 * union so they can be sent back; at run time the server's list, which may hold more.
 */
export async function auditActionFilters(): Promise<AuditActionFilter[]> {
  const resource = (filter: string) => filter.split('.')[0];
  const filters = await valuesOf('AuditActionFilter');
  return filters.sort(
    (a, b) =>
      resource(a).localeCompare(resource(b)) ||
      Number(b.endsWith('.*')) - Number(a.endsWith('.*')) ||
      a.localeCompare(b),
  ) as AuditActionFilter[];
}

/** Every event a webhook endpoint can subscribe to on this server (typed as above). */
export async function webhookEventTypes(): Promise<WebhookEventType[]> {
  return (await valuesOf('WebhookEventType')) as WebhookEventType[];
}
