import type { IncomingHttpHeaders, Server, ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { closeServer, createBodyServer, listenOnLoopback } from './loopback-server';

/** One request the fake agent received. */
export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The raw body. */
  text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: any;
  /** Resolves when the connection of this request closed; `answered` says whether the answer was sent. */
  closed: Promise<{ answered: boolean }>;
}

export interface AgentAnswer {
  status: number;
  json?: unknown;
  headers?: Record<string, string>;
}

/**
 * Decides the answer to the `count`-th request (1-based) on a path. May wait (to hold the request
 * open) before resolving.
 */
export type AgentHandler = (request: ReceivedRequest, count: number) => AgentAnswer | Promise<AgentAnswer>;

/**
 * A stand-in for a remote agent: a node:http server on 127.0.0.1 and a random port, answering each
 * path with its handler (404 for a path with none) and recording every request it receives.
 */
export class FakeAgentServer {
  readonly requests: ReceivedRequest[] = [];
  private readonly handlers = new Map<string, AgentHandler>();
  private readonly server: Server;
  private readonly open = new Set<ServerResponse>();
  private port = 0;

  private constructor() {
    this.server = createBodyServer((req, res, { path, text, json }) => {
      let answered = false;
      const closed = new Promise<{ answered: boolean }>((resolve) =>
        res.once('close', () => resolve({ answered })),
      );
      res.once('finish', () => (answered = true));
      const received: ReceivedRequest = {
        method: req.method ?? '',
        path,
        headers: req.headers,
        text,
        json,
        closed,
      };
      this.requests.push(received);
      this.open.add(res);
      res.once('close', () => this.open.delete(res));
      const handler = this.handlers.get(path);
      const count = this.requestsTo(path).length;
      Promise.resolve(handler ? handler(received, count) : { status: 404, json: { error: 'no handler' } })
        .then((answer) => {
          if (res.destroyed) return;
          const body = answer.json === undefined ? '' : JSON.stringify(answer.json);
          res.writeHead(answer.status, {
            ...(answer.json === undefined ? {} : { 'content-type': 'application/json' }),
            ...answer.headers,
          });
          res.end(body);
        })
        .catch(() => res.destroy());
    });
  }

  static async start(): Promise<FakeAgentServer> {
    const fake = new FakeAgentServer();
    fake.port = await listenOnLoopback(fake.server);
    return fake;
  }

  get origin(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get portNumber(): number {
    return this.port;
  }

  /** Answers requests to `path` with `handler`; returns the URL to configure. */
  on(path: string, handler: AgentHandler): string {
    this.handlers.set(path, handler);
    return this.url(path);
  }

  url(path: string): string {
    return `${this.origin}${path}`;
  }

  requestsTo(path: string): ReceivedRequest[] {
    return this.requests.filter((request) => request.path === path);
  }

  async close(): Promise<void> {
    for (const res of this.open) res.destroy();
    await closeServer(this.server);
  }
}

/** A promise with its resolver, to hold a fake agent's answer until the test releases it. */
export interface Gate {
  promise: Promise<void>;
  release: () => void;
}

export function gate(): Gate {
  let release!: () => void;
  const promise = new Promise<void>((resolve) => (release = resolve));
  return { promise, release };
}

// The suites' one pause: Node's own, re-exported where suites already import it from.
export { sleep };

/**
 * Calls `probe` until `done` holds or `timeoutMs` passes; returns the last value, so the caller's
 * assertion on it fails with what was last seen.
 */
export async function waitFor<T>(
  probe: () => PromiseLike<T> | T,
  done: (value: T) => boolean,
  { timeoutMs = 10_000, intervalMs = 50 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (done(value) || Date.now() >= deadline) return value;
    await sleep(intervalMs);
  }
}
