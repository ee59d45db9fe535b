import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders, Server } from 'node:http';
import { closeServer, createBodyServer, listenOnLoopback } from './loopback-server';

/** One request the receiver got, exactly as it arrived. */
export interface ReceivedWebhook {
  path: string;
  headers: IncomingHttpHeaders;
  /** The raw body, byte for byte (signatures are over these bytes). */
  raw: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: any;
  /** When it arrived (ms since the epoch, the receiver's clock). */
  receivedAt: number;
  /** The status the receiver answered with. */
  answered?: number;
}

export interface ReceiverAnswer {
  status: number;
  json?: unknown;
  /** Hold the answer until this settles (to keep a call in flight). */
  after?: Promise<unknown>;
}

/** Decides the answer to the `count`-th request (1-based) on one path. */
export type ReceiverScript = (request: ReceivedWebhook, count: number) => ReceiverAnswer | number;

/**
 * A local webhook receiver: node:http on 127.0.0.1 and a random port. Every path answers per its
 * script (200 when it has none), and every request is recorded with its headers and raw body.
 */
export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  private readonly scripts = new Map<string, ReceiverScript>();
  private readonly server: Server;
  private port = 0;

  private constructor() {
    this.server = createBodyServer((req, res, { path, text: raw, json }) => {
      const entry: ReceivedWebhook = { path, headers: req.headers, raw, json, receivedAt: Date.now() };
      this.received.push(entry);
      const count = this.at(path).length;
      const script = this.scripts.get(path);
      const decided = script ? script(entry, count) : 200;
      const answer: ReceiverAnswer = typeof decided === 'number' ? { status: decided } : decided;
      void Promise.resolve(answer.after).then(() => {
        if (res.destroyed) return;
        entry.answered = answer.status;
        const body = JSON.stringify(answer.json ?? { received: true });
        res.writeHead(answer.status, { 'content-type': 'application/json' });
        res.end(body);
      });
    });
  }

  static async start(): Promise<WebhookReceiver> {
    const receiver = new WebhookReceiver();
    receiver.port = await listenOnLoopback(receiver.server);
    return receiver;
  }

  get portNumber(): number {
    return this.port;
  }

  /** Sets how `path` answers; returns its URL. */
  script(path: string, script: ReceiverScript): string {
    this.scripts.set(path, script);
    return this.url(path);
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** Requests received on `path`, oldest first. */
  at(path: string): ReceivedWebhook[] {
    return this.received.filter((r) => r.path === path);
  }

  close(): Promise<void> {
    return closeServer(this.server);
  }
}

/**
 * Standard Webhooks verification, written here independently of the service: the key is the
 * base64-decoded part of the secret after `whsec_`, the signed content is `${id}.${timestamp}.${body}`,
 * and the header holds space-separated `v1,<base64 HMAC-SHA256>` signatures, any of which may match.
 */
export function verifyStandardWebhook(secret: string, received: ReceivedWebhook): boolean {
  const id = received.headers['webhook-id'];
  const timestamp = received.headers['webhook-timestamp'];
  const header = received.headers['webhook-signature'];
  if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof header !== 'string') return false;
  if (!secret.startsWith('whsec_')) return false;
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${received.raw}`).digest();
  return header.split(' ').some((candidate) => {
    const [version, signature] = candidate.split(',');
    if (version !== 'v1' || !signature) return false;
    const given = Buffer.from(signature, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}
