/**
 * The /v1 API through the client generated from the OpenAPI document, so a change to the API that breaks
 * the dashboard fails `npm run typecheck`.
 */
import createClient from 'openapi-fetch';
import type { components, paths } from '../../../clients/typescript/src/schema';
import { ApiError, authorizedFetch, NETWORK_PROBLEM, toProblem } from './session';

export type Schemas = components['schemas'];
export type ApiKey = Schemas['ApiKeyResponse'];
export type Role = Schemas['RoleResponse'];
export type User = Schemas['UserResponse'];
export type Team = Schemas['TeamResponse'];
export type Webhook = Schemas['WebhookResponse'];
export type AuditEntry = Schemas['AuditEntryResponse'];
export type Task = Schemas['TaskResponse'];
export type TaskOutputFile = Schemas['TaskOutputFileResponse'];
export type OAuthGrant = Schemas['OAuthGrantResponse'];
export type WebhookEvent = Schemas['CreateWebhookDto']['events'][number];
export type AuditAction = AuditEntry['action'];
export type Action = Schemas['CreateRoleDto']['permissions'][string][number];

export interface Page<T> {
  data: T[];
  next_cursor: string | null;
}

export const api = createClient<paths>({ fetch: authorizedFetch });

/** The answer's data, or an ApiError carrying the server's problem (detail and field errors). */
export async function call<T>(
  pending: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<T> {
  let answer: { data?: T; error?: unknown; response: Response };
  try {
    answer = await pending;
  } catch {
    throw new ApiError(NETWORK_PROBLEM);
  }
  if (answer.response.ok) return answer.data as T;
  throw new ApiError(toProblem(answer.error, answer.response));
}

/** Every page of a list, for the options of a select (bounded: these lists are short in practice). */
export async function everyPage<T>(load: (cursor?: string) => Promise<Page<T>>, maxPages = 10): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < maxPages; page++) {
    const answer = await load(cursor);
    items.push(...answer.data);
    if (!answer.next_cursor) break;
    cursor = answer.next_cursor;
  }
  return items;
}
