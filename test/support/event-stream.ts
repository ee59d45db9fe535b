import type { AddressInfo } from 'node:net';
import { signUpOrganization, type SignedUpOrganization } from './factories';
import { startTestApp, type TestApp } from './test-app';

export interface StreamedEvent {
  id: string;
  event: string;
  data: unknown;
}

/** Listens on a loopback port (Server-Sent Events need a real connection) and returns the base URL. */
export async function listen(t: TestApp): Promise<string> {
  const server = t.app.getHttpServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A fresh app listening on a loopback port (its base URL) for event streams, and a new organization on it. */
export async function startListeningApp(): Promise<{
  t: TestApp;
  baseUrl: string;
  org: SignedUpOrganization;
}> {
  const t = await startTestApp();
  try {
    return { t, baseUrl: await listen(t), org: await signUpOrganization(t.http) };
  } catch (error) {
    await t.close();
    throw error;
  }
}

/**
 * Opens a task's event stream (`Accept: text/event-stream`, after `lastEventId` when given) and collects
 * its events and comment lines until it ends (`ended`) or `close()` leaves it.
 */
export async function openEventStream(
  baseUrl: string,
  taskId: string,
  auth: Record<string, string>,
  lastEventId?: string,
) {
  const headers: Record<string, string> = { ...auth, accept: 'text/event-stream' };
  if (lastEventId) headers['last-event-id'] = lastEventId;
  const controller = new AbortController();
  const response = await fetch(`${baseUrl}/v1/tasks/${taskId}/events`, {
    headers,
    signal: controller.signal,
  });
  const events: StreamedEvent[] = [];
  const comments: string[] = [];
  const decoder = new TextDecoder();
  let buffer = '';
  const ended = (async () => {
    const reader = response.body!.getReader();
    for (;;) {
      const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (block.startsWith(':')) comments.push(block);
        else {
          const field = (name: string) => block.match(new RegExp(`^${name}: (.*)$`, 'm'))?.[1] ?? '';
          events.push({ id: field('id'), event: field('event'), data: JSON.parse(field('data')) });
        }
      }
    }
  })();
  return { response, events, comments, ended, close: () => controller.abort() };
}
