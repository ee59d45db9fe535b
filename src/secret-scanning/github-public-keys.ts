import { Inject, Injectable, Logger } from '@nestjs/common';
import type { KeyObject } from 'node:crypto';
import { Clock } from '../common/clock';
import { ConfigOf } from '../config/config-namespace';
import { leakedKeysConfig } from '../config/namespaces';
import { SafeHttpClient } from '../outbound/safe-http-client';
import { parsePublicKey } from './github-signature';

/** Misses fetch the keys again at most this often: a flood of made-up identifiers cannot make us hammer GitHub. */
export const MISS_REFETCH_INTERVAL_MS = 60_000;
/** GitHub answers within a second; a report waits for this at most before it is answered 503. */
const FETCH_TIMEOUT_MS = 5_000;
const MAX_DOCUMENT_BYTES = 256 * 1024;

export type PublicKeyLookup =
  | { found: KeyObject }
  /** The identifier is not among the keys published (as last read). */
  | { found: undefined; unavailable: false }
  /** No keys could be read (the last fetch failed), so nothing can be checked now. */
  | { found: undefined; unavailable: true };

/**
 * GitHub's secret-scanning public keys, by identifier, read from SECRET_SCANNING_KEYS_URL
 * (`{public_keys: [{key_identifier, key, is_current}]}`) and kept. An unknown identifier (GitHub
 * rotated its key) reads them again, but at most once a minute: the first fetch is free, later ones
 * triggered by misses wait out MISS_REFETCH_INTERVAL_MS, and concurrent misses share one fetch.
 * Keys that are no longer current still verify: GitHub signs with them until it stops publishing them.
 */
@Injectable()
export class GitHubPublicKeys {
  private readonly logger = new Logger('SecretScanning');
  private keys = new Map<string, KeyObject>();
  private readable = false;
  private attempted = false;
  private lastMissFetchAt = Number.NEGATIVE_INFINITY;
  private inFlight?: Promise<void>;

  constructor(
    private readonly http: SafeHttpClient,
    private readonly clock: Clock,
    @Inject(leakedKeysConfig.KEY) private readonly config: ConfigOf<typeof leakedKeysConfig>,
  ) {}

  async lookup(identifier: string): Promise<PublicKeyLookup> {
    const known = this.keys.get(identifier);
    if (known) return { found: known };
    if (this.inFlight) {
      await this.inFlight;
    } else if (!this.attempted || this.clock.now() - this.lastMissFetchAt >= MISS_REFETCH_INTERVAL_MS) {
      if (this.attempted) this.lastMissFetchAt = this.clock.now();
      this.attempted = true;
      this.inFlight = this.fetch().finally(() => (this.inFlight = undefined));
      await this.inFlight;
    }
    const found = this.keys.get(identifier);
    return found ? { found } : { found: undefined, unavailable: !this.readable };
  }

  private async fetch(): Promise<void> {
    try {
      const response = await this.http.get(this.config.secretScanningKeysUrl, {
        operatorTarget: true,
        timeoutMs: FETCH_TIMEOUT_MS,
        maxBytes: MAX_DOCUMENT_BYTES,
      });
      if (response.status !== 200) throw new Error(`answered ${response.status}`);
      const document = JSON.parse(response.body) as { public_keys?: unknown };
      if (!Array.isArray(document.public_keys)) throw new Error('no public_keys array');
      const keys = new Map<string, KeyObject>();
      for (const entry of document.public_keys as { key_identifier?: unknown; key?: unknown }[]) {
        if (typeof entry?.key_identifier !== 'string' || typeof entry.key !== 'string') continue;
        const key = parsePublicKey(entry.key);
        if (key) keys.set(entry.key_identifier, key);
      }
      this.keys = keys;
      this.readable = true;
    } catch (error) {
      // The keys read before (if any) stay: a report signed with them is still checked.
      this.lastMissFetchAt = this.clock.now();
      this.readable = this.keys.size > 0;
      this.logger.warn(
        `could not read GitHub's secret-scanning public keys from SECRET_SCANNING_KEYS_URL: ${(error as Error).message}`,
      );
    }
  }
}
