import { ConfigOf } from '../config/config-namespace';
import { outboundConfig } from '../config/namespaces';
import { Inject, Injectable } from '@nestjs/common';
import { lookup } from 'node:dns/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { isPublicAddress } from './address-policy';
import { OutboundErrorCode, OutboundTargetError } from './outbound.errors';

export const MAX_RESPONSE_BYTES = 1024 * 1024;

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
    const pinned: LookupFunction = (_hostname, lookupOptions, callback) => {
      if ((lookupOptions as { all?: boolean }).all) {
        (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [
          { address, family },
        ]);
      } else callback(null, address, family);
    };
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
