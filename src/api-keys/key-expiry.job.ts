import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { SYSTEM_ACTOR } from '../audit/audit.service';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { ApiKey } from './api-key.entity';
import { KeyChangeRecorder } from './key-change-recorder';

/**
 * Records `key.expiring` (EXPIRY_WARNING_DAYS ahead) and `key.expired`, once per key. Expiry itself
 * needs no job (the guard compares the clock); this writes the audit entries and events. Each scan
 * claims its rows with FOR UPDATE SKIP LOCKED and marks them in the same transaction, so several
 * instances never record one twice, and the scan at start catches up on what passed while down.
 */
@Injectable()
export class KeyExpiryJob implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('KeyExpiry');
  private timer?: NodeJS.Timeout;
  private running?: Promise<number>;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly dataSource: DataSource,
    private readonly changes: KeyChangeRecorder,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.runOnce(), this.config.KEY_EXPIRY_SCAN_SECONDS * 1000);
    this.timer.unref();
    void this.runOnce();
  }

  /** Returns how many entries were recorded. */
  runOnce(): Promise<number> {
    this.running ??= this.dataSource
      .transaction(
        async (manager) => (await this.warnExpiring(manager)) + (await this.recordExpired(manager)),
      )
      .catch((error: unknown) => {
        this.logger.warn(`expiry scan failed: ${(error as Error).message}`);
        return 0;
      })
      .finally(() => (this.running = undefined));
    return this.running;
  }

  private async warnExpiring(manager: EntityManager): Promise<number> {
    const keys = await this.claim(
      manager,
      `key.expiry_warned_at IS NULL AND key.expiration > now()
       AND key.expiration <= now() + make_interval(days => :days)`,
      { days: this.config.EXPIRY_WARNING_DAYS },
    );
    if (!keys.length) return 0;
    await manager.update(
      ApiKey,
      keys.map((k) => k.id),
      { expiryWarnedAt: new Date() },
    );
    await this.changes.record(
      manager,
      keys.map((key) => ({
        key,
        action: 'key.expiring',
        actor: SYSTEM_ACTOR,
        details: { expiration: key.expiration!.toISOString() },
      })),
    );
    return keys.length;
  }

  private async recordExpired(manager: EntityManager): Promise<number> {
    const keys = await this.claim(manager, 'key.expiry_recorded_at IS NULL AND key.expiration <= now()', {});
    if (!keys.length) return 0;
    await manager.update(
      ApiKey,
      keys.map((k) => k.id),
      { expiryRecordedAt: new Date() },
    );
    await this.changes.record(
      manager,
      keys.map((key) => ({
        key,
        action: 'key.expired',
        actor: SYSTEM_ACTOR,
        details: { expiration: key.expiration!.toISOString() },
      })),
    );
    return keys.length;
  }

  private claim(
    manager: EntityManager,
    condition: string,
    parameters: Record<string, unknown>,
  ): Promise<ApiKey[]> {
    return manager
      .createQueryBuilder(ApiKey, 'key')
      .where(condition, parameters)
      .andWhere('key.revoked_at IS NULL AND key.deleted_at IS NULL')
      .orderBy('key.expiration', 'ASC')
      .limit(500)
      .setLock('pessimistic_write')
      .setOnLocked('skip_locked')
      .getMany();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }
}
