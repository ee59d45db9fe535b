import { Injectable, Logger, BeforeApplicationShutdown } from '@nestjs/common';
import { ApiKeysRepository } from './api-keys.repository';

const WRITE_INTERVAL_MS = 60_000;
const FLUSH_DELAY_MS = 1_000;

/**
 * `last_used_at` with `last_used_ip` (and `previous_key_last_used_at` during a grace period) written
 * off the request path, at most once a minute per key unless the client address changed: a hot key
 * must not turn every request into an UPDATE.
 */
@Injectable()
export class KeyUsageRecorder implements BeforeApplicationShutdown {
  private readonly logger = new Logger('KeyUsage');
  /** Per key id, what was last written for its current value and for its previous one (a rotation's). */
  private readonly lastWritten = {
    current: new Map<string, Written>(),
    previous: new Map<string, Written>(),
  };
  private pending = { current: new Map<string, PendingUse>(), previous: new Map<string, PendingUse>() };
  private timer?: NodeJS.Timeout;

  constructor(private readonly keys: ApiKeysRepository) {}

  markUsed(keyId: string, previous: boolean, ip: string | null, now = Date.now()): void {
    // Two maps by key id rather than one by `${keyId}:${value}`: no string is built on every request.
    const value = previous ? 'previous' : 'current';
    const written = this.lastWritten[value];
    const last = written.get(keyId);
    if (last !== undefined && now - last.at < WRITE_INTERVAL_MS && (previous || last.ip === ip)) return;
    written.set(keyId, { at: now, ip });
    this.pending[value].set(keyId, { at: new Date(now), ip });
    if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), FLUSH_DELAY_MS);
      this.timer.unref();
    }
    if (written.size > 100_000) written.clear();
  }

  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.pending;
    this.pending = { current: new Map(), previous: new Map() };
    for (const value of ['current', 'previous'] as const) {
      for (const [keyId, { at, ip }] of batch[value]) {
        try {
          await this.keys.recordUse(keyId, value === 'previous', at, ip);
        } catch (error) {
          this.logger.warn(`could not record use of ${keyId}: ${(error as Error).message}`);
        }
      }
    }
  }

  /** Buffers are written before connections close (see AuditService.beforeApplicationShutdown). */
  async beforeApplicationShutdown(): Promise<void> {
    await this.flush();
  }
}

interface Written {
  at: number;
  ip: string | null;
}

interface PendingUse {
  at: Date;
  ip: string | null;
}
