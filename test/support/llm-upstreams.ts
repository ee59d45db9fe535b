import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import { createBodyServer, listenOnLoopback } from './loopback-server';

/** How the next requests are answered, one behaviour a request (the last one repeats). */
export type UpstreamBehaviour =
  /** Streams `deltas` text deltas, then the usage and the end. */
  | {
      kind: 'stream';
      deltas: string[];
      model?: string;
      inputTokens?: number;
      cachedTokens?: number;
      outputTokens?: number;
    }
  /** Sends the headers and a first delta, then nothing until the client closes the connection. */
  | { kind: 'hang' }
  /** An error answer: `status` with the provider's error body, `retryAfter` as Retry-After. */
  | { kind: 'error'; status: number; message: string; retryAfter?: string };

/** One request the upstream received. */
export interface UpstreamRequest {
  path: string;
  headers: IncomingHttpHeaders;
  body: any;
  receivedAt: number;
  /** When the client closed the connection of a `hang` answer. */
  abortedAt?: number;
}

type Dialect = 'openai' | 'anthropic';

/**
 * A local server speaking one provider's streaming wire format, as the providers document it: Chat
 * Completions (`data:` chunks, a last chunk with `usage`, `data: [DONE]`) or Anthropic's Messages
 * (`message_start`, `content_block_*`, `message_delta` with `output_tokens` and `stop_reason`,
 * `message_stop`). It records every request, and answers as the test tells it.
 */
export class LlmUpstream {
  readonly requests: UpstreamRequest[] = [];
  private behaviours: UpstreamBehaviour[] = [{ kind: 'stream', deltas: ['Hello', ', ', 'world'] }];
  private aborted: Array<() => void> = [];

  private constructor(
    readonly dialect: Dialect,
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(dialect: Dialect): Promise<LlmUpstream> {
    const holder: { upstream?: LlmUpstream } = {};
    const server = createBodyServer((req, res, body) =>
      holder.upstream!.handle(req, res, body.path, body.json),
    );
    const port = await listenOnLoopback(server);
    holder.upstream = new LlmUpstream(dialect, server, port);
    return holder.upstream;
  }

  /** The agent's base_url: Chat Completions below `/v1`, Anthropic's SDK adds `/v1/messages` itself. */
  get baseUrl(): string {
    return this.dialect === 'openai' ? `http://127.0.0.1:${this.port}/v1` : `http://127.0.0.1:${this.port}`;
  }

  /** The next requests' answers, in order; the last repeats. */
  answer(...behaviours: UpstreamBehaviour[]): void {
    this.behaviours = behaviours;
  }

  /** Resolves once a request's connection was closed by the client while the upstream hung. */
  whenAborted(): Promise<void> {
    return new Promise((resolve) => this.aborted.push(resolve));
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private handle(req: IncomingMessage, res: ServerResponse, path: string, body: any): void {
    const recorded: UpstreamRequest = { path, headers: req.headers, body, receivedAt: Date.now() };
    this.requests.push(recorded);
    const behaviour = this.behaviours.length > 1 ? this.behaviours.shift()! : this.behaviours[0];
    if (behaviour.kind === 'error') return this.error(res, behaviour);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    if (behaviour.kind === 'hang') {
      res.on('close', () => {
        recorded.abortedAt = Date.now();
        for (const resolve of this.aborted.splice(0)) resolve();
      });
      this.send(res, this.dialect === 'openai' ? this.chunk(body, { content: 'thinking' }) : undefined);
      if (this.dialect === 'anthropic') {
        this.event(res, 'message_start', this.messageStart(body, 10, 0));
        this.event(res, 'content_block_delta', {
          type: 'content_block_delta',
          index: 0,
          delta: { type: 'text_delta', text: 'thinking' },
        });
      }
      return;
    }
    if (this.dialect === 'openai') this.streamChat(res, body, behaviour);
    else this.streamMessages(res, body, behaviour);
  }

  private error(res: ServerResponse, behaviour: Extract<UpstreamBehaviour, { kind: 'error' }>): void {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (behaviour.retryAfter !== undefined) headers['retry-after'] = behaviour.retryAfter;
    const body =
      this.dialect === 'openai'
        ? { error: { message: behaviour.message, type: 'invalid_request_error', code: null } }
        : {
            type: 'error',
            error: {
              type: behaviour.status === 529 ? 'overloaded_error' : 'api_error',
              message: behaviour.message,
            },
          };
    res.writeHead(behaviour.status, headers).end(JSON.stringify(body));
  }

  private chunk(body: any, delta: object, extra: object = {}): object {
    return {
      id: 'chatcmpl-test',
      object: 'chat.completion.chunk',
      created: Math.floor(Date.now() / 1000),
      model: `${body?.model ?? 'model'}-served`,
      choices: [{ index: 0, delta, finish_reason: null }],
      ...extra,
    };
  }

  private streamChat(
    res: ServerResponse,
    body: any,
    b: Extract<UpstreamBehaviour, { kind: 'stream' }>,
  ): void {
    this.send(res, this.chunk(body, { role: 'assistant', content: '' }));
    for (const text of b.deltas) this.send(res, this.chunk(body, { content: text }));
    this.send(res, { ...this.chunk(body, {}), choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
    this.send(res, {
      ...this.chunk(body, {}),
      choices: [],
      usage: {
        prompt_tokens: b.inputTokens ?? 12,
        completion_tokens: b.outputTokens ?? b.deltas.length,
        total_tokens: (b.inputTokens ?? 12) + (b.outputTokens ?? b.deltas.length),
        prompt_tokens_details: { cached_tokens: b.cachedTokens ?? 0 },
      },
    });
    res.end('data: [DONE]\n\n');
  }

  private messageStart(body: any, input: number, cached: number): object {
    return {
      type: 'message_start',
      message: {
        id: 'msg_test',
        type: 'message',
        role: 'assistant',
        model: `${body?.model ?? 'model'}-served`,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: {
          input_tokens: input,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: cached,
          output_tokens: 1,
        },
      },
    };
  }

  private streamMessages(
    res: ServerResponse,
    body: any,
    b: Extract<UpstreamBehaviour, { kind: 'stream' }>,
  ): void {
    const cached = b.cachedTokens ?? 0;
    this.event(res, 'message_start', this.messageStart(body, (b.inputTokens ?? 12) - cached, cached));
    this.event(res, 'content_block_start', {
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'text', text: '' },
    });
    this.event(res, 'ping', { type: 'ping' });
    for (const text of b.deltas) {
      this.event(res, 'content_block_delta', {
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'text_delta', text },
      });
    }
    this.event(res, 'content_block_stop', { type: 'content_block_stop', index: 0 });
    this.event(res, 'message_delta', {
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: b.outputTokens ?? b.deltas.length },
    });
    this.event(res, 'message_stop', { type: 'message_stop' });
    res.end();
  }

  private send(res: ServerResponse, data: object | undefined): void {
    if (data) res.write(`data: ${JSON.stringify(data)}\n\n`);
  }

  private event(res: ServerResponse, name: string, data: object): void {
    res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
  }
}
