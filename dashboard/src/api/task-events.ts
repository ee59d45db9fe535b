/**
 * A task's events as Server-Sent Events (`GET /v1/tasks/{id}/events`, `Accept: text/event-stream`).
 * An EventSource cannot send the access token (it lives in this page's memory, not in a cookie), so the
 * stream is read with fetch and a ReadableStream, through the same authorizedFetch as every other call.
 * A stream that drops is opened again with `Last-Event-ID`, so nothing is missed or repeated; it stops
 * after the task's terminal status, or when the caller aborts.
 */
import { ApiError, authorizedFetch, problemOf, type ProblemDetails } from './session';

export interface StreamedTaskEvent {
  seq: number;
  type: string;
  data: Record<string, unknown>;
}

export const TERMINAL_STATUSES = ['succeeded', 'failed', 'cancelled'];

/** Waits before reconnecting, at most this long (doubling from 500 ms while the server cannot be reached). */
const MAX_RETRY_MS = 8_000;

export interface FollowHandlers {
  onEvent: (event: StreamedTaskEvent) => void;
  /** `live`: reading the stream; `reconnecting`: it dropped and is being opened again; `ended`: the task ended. */
  onState: (state: 'live' | 'reconnecting' | 'ended') => void;
  /** The server refused the stream (the task is not there, or no longer readable): following stops. */
  onProblem: (problem: ProblemDetails) => void;
}

/** Parses the complete blocks of `buffer` (events end with a blank line); returns what is left over. */
function parseBlocks(buffer: string, emit: (event: StreamedTaskEvent) => void): string {
  let end: number;
  while ((end = buffer.indexOf('\n\n')) >= 0) {
    const block = buffer.slice(0, end);
    buffer = buffer.slice(end + 2);
    const fields = new Map<string, string>();
    for (const line of block.split('\n')) {
      // A line starting with ':' is a comment (the server's keep-alive).
      if (!line || line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const name = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      fields.set(name, fields.has(name) && name === 'data' ? `${fields.get(name)}\n${value}` : value);
    }
    if (!fields.has('data')) continue;
    emit({
      seq: Number(fields.get('id')),
      type: fields.get('event') ?? 'message',
      data: JSON.parse(fields.get('data')!) as Record<string, unknown>,
    });
  }
  return buffer;
}

const pause = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });

/** Follows the task's events until its terminal status or `signal`; resolves when it stops. */
export async function followTaskEvents(
  taskId: string,
  signal: AbortSignal,
  handlers: FollowHandlers,
): Promise<void> {
  let lastSeq = 0;
  let ended = false;
  let retryMs = 500;
  while (!ended && !signal.aborted) {
    const headers: Record<string, string> = { Accept: 'text/event-stream' };
    if (lastSeq > 0) headers['Last-Event-ID'] = String(lastSeq);
    try {
      const response = await authorizedFetch(
        new Request(`/v1/tasks/${encodeURIComponent(taskId)}/events`, { headers, signal, cache: 'no-store' }),
      );
      if (!response.ok || !response.body) {
        // 4xx: asking again would get the same answer. 5xx: the server may be starting or stopping.
        if (response.status < 500) {
          handlers.onProblem(await problemOf(response));
          return;
        }
        throw new ApiError(await problemOf(response));
      }
      handlers.onState('live');
      retryMs = 500;
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = '';
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buffer = parseBlocks(buffer + decoder.decode(value, { stream: true }), (event) => {
          // A resumed stream starts after lastSeq; this guards against a repeat all the same.
          if (event.seq <= lastSeq) return;
          lastSeq = event.seq;
          handlers.onEvent(event);
          if (event.type === 'status' && TERMINAL_STATUSES.includes(String(event.data.status))) ended = true;
        });
      }
    } catch {
      // Dropped (network, server restart) or aborted: the loop decides.
    }
    if (ended) {
      handlers.onState('ended');
      return;
    }
    if (signal.aborted) return;
    handlers.onState('reconnecting');
    await pause(retryMs, signal);
    retryMs = Math.min(retryMs * 2, MAX_RETRY_MS);
  }
}
