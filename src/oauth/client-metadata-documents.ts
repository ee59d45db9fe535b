import { Inject, Injectable } from '@nestjs/common';
import { ConfigOf } from '../config/config-namespace';
import { outboundConfig } from '../config/namespaces';
import { SafeHttpClient } from '../outbound/safe-http-client';

/** The most bytes a client's metadata document may have. */
const MAX_DOCUMENT_BYTES = 64 * 1024;

/**
 * Client ID Metadata Documents (a `client_id` that is a URL, its document the client's registration),
 * fetched only through the outbound policy (SafeHttpClient): no private or loopback target unless
 * ALLOW_PRIVATE_NETWORK_TARGETS=true, bounded size and time.
 */
@Injectable()
export class ClientMetadataDocuments {
  constructor(
    private readonly outbound: SafeHttpClient,
    @Inject(outboundConfig.KEY) private readonly settings: ConfigOf<typeof outboundConfig>,
  ) {}

  /** Whether oidc-provider may fetch the document of this `client_id` (its own support, https ones). */
  async mayFetch(clientId: string): Promise<boolean> {
    try {
      await this.outbound.assertAllowedTarget(clientId);
      return true;
    } catch {
      return false;
    }
  }

  /** oidc-provider's `fetch`, through the outbound policy. */
  async fetch(url: string): Promise<Response> {
    const answer = await this.outbound.get(url, { maxBytes: MAX_DOCUMENT_BYTES });
    return new Response(answer.body, {
      status: answer.status,
      headers: { 'content-type': 'application/json' },
    });
  }

  /**
   * A document at an `http` URL, which oidc-provider's own support (https only) does not fetch: taken
   * only with ALLOW_PRIVATE_NETWORK_TARGETS=true (the contract), with the same rules: a JSON object whose
   * `client_id` is that URL, and no shared secret.
   */
  async httpDocument(id: string): Promise<Record<string, unknown> | undefined> {
    if (!this.settings.allowPrivateNetworkTargets || !/^http:\/\//i.test(id)) return undefined;
    let document: unknown;
    try {
      const answer = await this.outbound.get(id, { maxBytes: MAX_DOCUMENT_BYTES });
      if (answer.status !== 200) return undefined;
      document = JSON.parse(answer.body);
    } catch {
      return undefined;
    }
    if (typeof document !== 'object' || document === null || Array.isArray(document)) return undefined;
    const properties = document as Record<string, unknown>;
    if (properties.client_id !== id || 'client_secret' in properties) return undefined;
    if ((properties.token_endpoint_auth_method ?? 'none') !== 'none') return undefined;
    return { ...properties, token_endpoint_auth_method: 'none' };
  }
}
