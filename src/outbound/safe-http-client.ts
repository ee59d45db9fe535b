import { ConfigOf } from '../config/config-namespace';
import { outboundConfig } from '../config/namespaces';
import { Inject, Injectable } from '@nestjs/common';
import { lookup } from 'node:dns/promises';
import { type ClientRequest, request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { isPublicAddress } from './address-policy';
import { OutboundErrorCode, OutboundTargetError } from './outbound.errors';

export const MAX_RESPONSE_BYTES = 1024 * 1024;
/**
 * What one streamed response may carry in all: a model's longest answer (200,000 tokens) framed as
 * server-sent events, a few hundred bytes of JSON around each delta, fits with room to spare.
 */
export const MAX_STREAMED_BYTES = 64 * 1024 * 1024;

/** The WHATWG fetch signature SDKs accept as their `fetch` option. */
export type StreamingFetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

export interface StreamingOptions {
  /** Longest silence, waiting for the answer or between two of its chunks; default OUTBOUND_TIMEOUT_MS. */
  idleTimeoutMs?: number;
  /** Bytes the whole streamed body may carry; default MAX_STREAMED_BYTES. */
  maxBytes?: number;
}

export class OutboundError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'OutboundError';
  }
}

export interface OutboundResponse {
  status: number;
  body: string;
}

export interface OutboundOptions {
  headers?: Record<string, string>;
  timeoutMs?: number;
  maxBytes?: number;
  signal?: AbortSignal;
  /**
   * The URL is the operator's own configuration (SECRET_SCANNING_KEYS_URL), not one an organization
   * supplied: the private-address rule, which keeps organizations from reaching the service's own
   * network, does not apply to it. Everything else (no redirects, time and size bounds) still does.
   */
  operatorTarget?: boolean;
}

/**
 * Every HTTP call the service makes on someone's behalf (http agents, webhooks) goes through here:
 * http(s) only; the host is resolved once and every address checked (no loopback, private, link-local
 * or other non-public target unless ALLOW_PRIVATE_NETWORK_TARGETS=true); the connection is pinned to
 * the checked address, so a DNS answer cannot change in between; redirects are never followed; the
 * response is bounded in time and size.
 */
@Injectable()
export class SafeHttpClient {
  constructor(@Inject(outboundConfig.KEY) private readonly config: ConfigOf<typeof outboundConfig>) {}

  /** Refuses a URL that is not an acceptable target; used at configuration time too (400). */
  async assertAllowedTarget(url: string): Promise<void> {
    try {
      await this.resolveTarget(new URL(url));
    } catch (error) {
      if (error instanceof OutboundError || (error as { code?: string }).code === 'ERR_INVALID_URL') {
        throw new OutboundTargetError(OutboundErrorCode.TargetNotAllowed, (error as Error).message, {
          errors: [{ field: 'url', message: (error as Error).message }],
        });
      }
      throw error;
    }
  }

  postJson(url: string, payload: unknown, options: OutboundOptions = {}): Promise<OutboundResponse> {
    return this.post(url, JSON.stringify(payload), options);
  }

  /** POSTs an already serialised JSON body (webhooks sign the exact bytes they send). */
  post(url: string, json: string, options: OutboundOptions = {}): Promise<OutboundResponse> {
    return this.send('POST', url, Buffer.from(json), options);
  }

  /** GETs a document (GitHub's secret-scanning public keys), bounded like every other call. */
  get(url: string, options: OutboundOptions = {}): Promise<OutboundResponse> {
    return this.send('GET', url, undefined, options);
  }

  /**
   * A fetch whose response body streams as it arrives (SDKs of model providers take it as their `fetch`),
   * under the same policy as every call here: the target resolved and checked, the connection pinned to
   * the checked address, no redirects; silence bounded by `idleTimeoutMs`, the whole body by `maxBytes`.
   * A refused target rejects with an OutboundError (`target_not_allowed`), as the other calls do.
   */
  streamingFetch(options: StreamingOptions = {}): StreamingFetch {
    return (input, init = {}) => this.stream(input, init, options);
  }

  private async stream(
    input: string | URL | Request,
    init: RequestInit,
    options: StreamingOptions,
  ): Promise<Response> {
    if (input instanceof Request) throw new TypeError('pass the URL and the init, not a Request');
    const target = new URL(String(input));
    const body = bodyBytes(init.body);
    const { address, family } = await this.resolveTarget(target);
    const idleTimeoutMs = options.idleTimeoutMs ?? this.config.timeoutMs;
    const maxBytes = options.maxBytes ?? MAX_STREAMED_BYTES;
    const headers: Record<string, string> = { 'user-agent': 'Gatehouse/1' };
    new Headers(init.headers).forEach((value, name) => (headers[name] = value));
    if (body) headers['content-length'] = String(body.length);
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;

    return new Promise<Response>((resolve, reject) => {
      const request = send(target, {
        method: init.method ?? 'GET',
        lookup: pinnedTo(address, family),
        timeout: idleTimeoutMs,
        signal: init.signal ?? undefined,
        headers,
      });
      request.on('timeout', () =>
        request.destroy(new OutboundError('timeout', `nothing received for ${idleTimeoutMs} ms`)),
      );
      request.on('error', (error) =>
        reject(
          error instanceof OutboundError || error.name === 'AbortError'
            ? error
            : new OutboundError('connection_failed', error.message),
        ),
      );
      request.on('response', (response: IncomingMessage) => {
        const status = response.statusCode ?? 0;
        if (status >= 300 && status < 400) {
          response.resume();
          request.destroy();
          return reject(
            new OutboundError(
              'redirect_not_followed',
              `the target answered ${status}; redirects are not followed`,
            ),
          );
        }
        resolve(
          new Response(bodyStream(request, response, maxBytes), { status, headers: headersOf(response) }),
        );
      });
      request.end(body);
    });
  }

  private async send(
    method: 'GET' | 'POST',
    url: string,
    body: Buffer | undefined,
    options: OutboundOptions,
  ): Promise<OutboundResponse> {
    const target = new URL(url);
    const { address, family } = await this.resolveTarget(target, options.operatorTarget === true);
    const timeoutMs = options.timeoutMs ?? this.config.timeoutMs;
    const maxBytes = options.maxBytes ?? MAX_RESPONSE_BYTES;
    const pinned = pinnedTo(address, family);
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;

    return new Promise<OutboundResponse>((resolve, reject) => {
      const request = send(
        target,
        {
          method,
          lookup: pinned,
          timeout: timeoutMs,
          signal: options.signal,
          headers: {
            ...(body
              ? { 'content-type': 'application/json', 'content-length': String(body.length) }
              : { accept: 'application/json' }),
            'user-agent': 'Gatehouse/1',
            ...options.headers,
          },
        },
        (response: IncomingMessage) => {
          const status = response.statusCode ?? 0;
          if (status >= 300 && status < 400) {
            response.resume();
            return reject(
              new OutboundError(
                'redirect_not_followed',
                `the target answered ${status}; redirects are not followed`,
              ),
            );
          }
          const chunks: Buffer[] = [];
          let received = 0;
          response.on('data', (chunk: Buffer) => {
            received += chunk.length;
            if (received > maxBytes) {
              request.destroy(
                new OutboundError('response_too_large', `the response exceeded ${maxBytes} bytes`),
              );
              return;
            }
            chunks.push(chunk);
          });
          response.on('end', () => resolve({ status, body: Buffer.concat(chunks).toString('utf8') }));
          response.on('error', reject);
        },
      );
      const deadline = setTimeout(
        () => request.destroy(new OutboundError('timeout', `no complete answer within ${timeoutMs} ms`)),
        timeoutMs,
      );
      request.on('close', () => clearTimeout(deadline));
      request.on('timeout', () =>
        request.destroy(new OutboundError('timeout', `no answer within ${timeoutMs} ms`)),
      );
      request.on('error', (error) =>
        reject(
          error instanceof OutboundError ? error : new OutboundError('connection_failed', error.message),
        ),
      );
      request.end(body);
    });
  }

  private async resolveTarget(
    target: URL,
    operatorTarget = false,
  ): Promise<{ address: string; family: number }> {
    if (target.protocol !== 'http:' && target.protocol !== 'https:') {
      throw new OutboundError('target_not_allowed', 'only http and https targets are allowed');
    }
    if (target.username || target.password) {
      throw new OutboundError('target_not_allowed', 'credentials in the URL are not allowed');
    }
    const host = target.hostname.replace(/^\[|\]$/g, '');
    const addresses = isIP(host)
      ? [{ address: host, family: isIP(host) }]
      : await lookup(host, { all: true, verbatim: true }).catch(() => {
          throw new OutboundError('target_unresolvable', `the host ${host} could not be resolved`);
        });
    if (!addresses.length) throw new OutboundError('target_unresolvable', `the host ${host} has no address`);
    if (!this.config.allowPrivateNetworkTargets && !operatorTarget) {
      const refused = addresses.find((a) => !isPublicAddress(a.address));
      if (refused) {
        throw new OutboundError(
          'target_not_allowed',
          `the target resolves to a non-public address (${refused.address}); private, loopback and link-local targets are refused`,
        );
      }
    }
    return addresses[0];
  }
}

/** A lookup that answers the address already checked, so the connection goes nowhere else. */
function pinnedTo(address: string, family: number): LookupFunction {
  return (_hostname, lookupOptions, callback) => {
    if ((lookupOptions as { all?: boolean }).all) {
      (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [
        { address, family },
      ]);
    } else callback(null, address, family);
  };
}

function bodyBytes(body: RequestInit['body']): Buffer | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return Buffer.from(body);
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  if (ArrayBuffer.isView(body)) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  throw new TypeError('only string and byte bodies are sent');
}

function headersOf(response: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(response.headers)) {
    for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value])
      headers.append(name, one);
  }
  return headers;
}

/**
 * The response's bytes as they arrive; errors when the connection fails, times out, is aborted or
 * passes `maxBytes` (then the connection is closed). Cancelling the stream closes the connection.
 */
function bodyStream(
  request: ClientRequest,
  response: IncomingMessage,
  maxBytes: number,
): ReadableStream<Uint8Array> | null {
  if ([204, 205, 304].includes(response.statusCode ?? 0)) {
    response.resume();
    return null;
  }
  let received = 0;
  let settled = false;
  // The chunks the HTTP parser hands over in one turn (one socket read holds many chunks of a chunked
  // body: a model's stream sends one per token) go to the reader as one: a read of the stream per socket
  // read, not one per chunk, each a promise and a turn of the reader's loop (bench:llm's streaming case).
  let held: Buffer[] = [];
  return new ReadableStream<Uint8Array>({
    start(controller) {
      const flush = (): void => {
        if (settled || !held.length) return;
        const chunks = held;
        held = [];
        controller.enqueue(new Uint8Array(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
      };
      const fail = (error: Error): void => {
        if (settled) return;
        settled = true;
        held = [];
        controller.error(error);
      };
      response.on('data', (chunk: Buffer) => {
        if (settled) return;
        received += chunk.length;
        if (received > maxBytes) {
          const error = new OutboundError('response_too_large', `the response exceeded ${maxBytes} bytes`);
          fail(error);
          // The stream carries the error; destroyed without one, nothing else emits it.
          response.destroy();
          request.destroy();
          return;
        }
        if (!held.length) queueMicrotask(flush);
        held.push(chunk);
      });
      response.on('end', () => {
        if (settled) return;
        flush();
        settled = true;
        controller.close();
      });
      response.on('error', fail);
      response.on('aborted', () =>
        fail(new OutboundError('connection_failed', 'the connection closed early')),
      );
      request.on('error', fail);
    },
    cancel() {
      settled = true;
      request.destroy();
    },
  });
}
