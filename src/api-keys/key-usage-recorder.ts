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
  private readonly lastWritten = new Map<string, { at: number; ip: string | null }>();
  private pending = new Map<string, { at: Date; previous: boolean; ip: string | null }>();
  private timer?: NodeJS.Timeout;

  constructor(private readonly keys: ApiKeysRepository) {}

  markUsed(keyId: string, previous: boolean, ip: string | null, now = Date.now()): void {
    const slot = `${keyId}:${previous ? 'previous' : 'current'}`;
    const last = this.lastWritten.get(slot);
    if (last !== undefined && now - last.at < WRITE_INTERVAL_MS && (previous || last.ip === ip)) return;
    this.lastWritten.set(slot, { at: now, ip });
    this.pending.set(slot, { at: new Date(now), previous, ip });
    if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), FLUSH_DELAY_MS);
      this.timer.unref();
    }
    if (this.lastWritten.size > 100_000) this.lastWritten.clear();
  }

  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.pending;
    this.pending = new Map();
    for (const [slot, { at, previous, ip }] of batch) {
      const keyId = slot.slice(0, slot.lastIndexOf(':'));
      try {
        await this.keys.recordUse(keyId, previous, at, ip);
      } catch (error) {
        this.logger.warn(`could not record use of ${keyId}: ${(error as Error).message}`);
      }
    }
  }

  /** Buffers are written before connections close (see AuditService.beforeApplicationShutdown). */
  async beforeApplicationShutdown(): Promise<void> {
    await this.flush();
  }
}
