/**
 * Gatehouse's typed client: openapi-fetch over the types openapi-typescript generates from the OpenAPI
 * document (./schema.d.ts, `npm run openapi:client`; never edited by hand). Every call is openapi-fetch's
 * own (`client.POST('/v1/api-keys', { body })` answers `{ data, error, response }`); the two helpers
 * below are for the answers its defaults would misread: a file's bytes and a task's event stream.
 */
import createClient, { type Client, type ClientOptions } from 'openapi-fetch';
import type { components, operations, paths } from './schema';

export type { components, operations, paths };
export type Schemas = components['schemas'];
/** Every error's body (RFC 9457 application/problem+json); `code` is the stable machine-readable part. */
export type Problem = Schemas['ProblemSchema'];
export type TaskEvent = Schemas['TaskEventPage']['data'][number];
/** A task event as the stream sends it: `id:` (seq), `event:` (type) and `data:`, no `created_at`. */
export type StreamedTaskEvent = TaskEvent extends infer E
  ? E extends TaskEvent
    ? Pick<E, 'seq' | 'type' | 'data'>
    : never
  : never;

/** application/json and application/problem+json: what answers are typed as where there is a choice. */
type JsonMedia = `${string}/${string}json`;

/**
 * Typed by the JSON answers: an operation that also answers another media type (the task events' page
 * or, with Accept: text/event-stream, a stream) is typed as its JSON page (see streamTaskEvents), and
 * errors as their problem document.
 */
export type GatehouseClient = Client<paths, JsonMedia>;

/**
 * A client for the API at `baseUrl` (e.g. `https://gatehouse.example.com`), presenting `credential` (an
 * API key, `sk_…`, or an access token from `POST /v1/auth/token`) as `Authorization: Bearer`; without
 * one, for the public operations (sign in). Lists in a query are sent comma-separated
 * (`?expand=actor,key`), the form the document declares (`style: form, explode: false`).
 */
export function createGatehouseClient(
  baseUrl: string,
  credential?: string,
  options: Omit<ClientOptions, 'baseUrl' | 'headers' | 'querySerializer'> = {},
): GatehouseClient {
  return createClient<paths, JsonMedia>({
    ...options,
    baseUrl,
    headers: credential ? { Authorization: `Bearer ${credential}` } : {},
    querySerializer: { array: { style: 'form', explode: false } },
  });
}

/** An answer that is not a 2xx, with its problem document (when the body was one). */
export class GatehouseError extends Error {
  constructor(
    readonly status: number,
    readonly problem: Partial<Problem> | undefined,
  ) {
    super(`${status} ${problem?.code ?? ''}: ${problem?.detail ?? problem?.title ?? ''}`.trim());
    this.name = 'GatehouseError';
  }
}

/**
 * A file's bytes (`GET /v1/files/{id}/content`) as a Blob. The answer's Content-Type is the file's own
 * (text, images, anything), which openapi-fetch's default JSON parse would fail on: this reads it as
 * bytes (`parseAs: 'blob'`). The answer is openapi-fetch's `{ data, error, response }`.
 */
export function downloadFile(client: GatehouseClient, id: string) {
  return client.GET('/v1/files/{id}/content', { params: { path: { id } }, parseAs: 'blob' });
}

/**
 * A task's events as they happen (`GET /v1/tasks/{id}/events` with Accept: text/event-stream, read with
 * `parseAs: 'stream'`): the events so far, then each new one, ending after the terminal `status` event.
 * After `lastEventId` (a `seq` already seen), it resumes after that event. Throws GatehouseError on a
 * non-2xx answer (an unknown task is a 404).
 */
export async function* streamTaskEvents(
  client: GatehouseClient,
  id: string,
  { lastEventId, signal }: { lastEventId?: number; signal?: AbortSignal } = {},
): AsyncGenerator<StreamedTaskEvent> {
  const { data, error, response } = await client.GET('/v1/tasks/{id}/events', {
    params: {
      path: { id },
      header: lastEventId === undefined ? undefined : { 'Last-Event-ID': String(lastEventId) },
    },
    headers: { Accept: 'text/event-stream' },
    parseAs: 'stream',
    signal,
  });
  if (!response.ok || !data) throw new GatehouseError(response.status, error as Partial<Problem>);
  for await (const message of serverSentEvents(data)) {
    yield {
      seq: Number(message.id),
      type: message.event,
      data: JSON.parse(message.data),
    } as StreamedTaskEvent;
  }
}

interface ServerSentEvent {
  id: string;
  event: string;
  data: string;
}

/**
 * The messages of a text/event-stream body (the WHATWG format): `field: value` lines, a blank line
 * ending each message, `:` lines comments (the server's keep-alives). Gatehouse ends lines with `\n`.
 */
async function* serverSentEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  let message: ServerSentEvent = { id: '', event: 'message', data: '' };
  let dataLines: string[] = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffered += decoder.decode(value, { stream: true });
      const lines = buffered.split(/\r?\n/);
      buffered = lines.pop() ?? '';
      for (const line of lines) {
        if (line === '') {
          if (dataLines.length) yield { ...message, data: dataLines.join('\n') };
          message = { id: message.id, event: 'message', data: '' };
          dataLines = [];
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon === -1 ? line : line.slice(0, colon);
        const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'data') dataLines.push(value);
        else if (field === 'event') message.event = value;
        else if (field === 'id') message.id = value;
      }
    }
  } finally {
    // Also when the caller stops early (`break`): the request ends, not only the reading.
    await reader.cancel().catch(() => undefined);
  }
}
