import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AuditService, SYSTEM_ACTOR } from '../audit/audit.service';
import { APP_CONFIG, AppConfig } from '../config/app-config';

/**
 * Records `key.expired` once per key. Expiry itself needs no job (the guard compares the clock); this
 * only writes the audit entry. The UPDATE … RETURNING claims each key atomically, so several
 * instances never record one twice, and a scan at start catches up on what passed while down.
 */
@Injectable()
export class KeyExpiryJob implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('KeyExpiry');
  private timer?: NodeJS.Timeout;
  private running?: Promise<number>;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly dataSource: DataSource,
    private readonly audit: AuditService,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.runOnce(), this.config.KEY_EXPIRY_SCAN_SECONDS * 1000);
    this.timer.unref();
    void this.runOnce();
  }

  /** Returns how many keys were newly recorded as expired. */
  runOnce(): Promise<number> {
    this.running ??= this.scan()
      .catch((error: unknown) => {
        this.logger.warn(`expiry scan failed: ${(error as Error).message}`);
        return 0;
      })
      .finally(() => (this.running = undefined));
    return this.running;
  }

  private async scan(): Promise<number> {
    return this.dataSource.transaction(async (manager) => {
      const result = await manager.query<
        [{ id: string; organization_id: string; expiration: Date }[], number]
      >(
        `UPDATE api_keys SET expiry_recorded_at = now()
          WHERE id IN (SELECT id FROM api_keys
                        WHERE expiration <= now() AND expiry_recorded_at IS NULL
                          AND revoked_at IS NULL AND deleted_at IS NULL
                        LIMIT 500 FOR UPDATE SKIP LOCKED)
          RETURNING id, organization_id, expiration`,
      );
      const rows = result[0];
      await this.audit.append(
        manager,
        rows.map((row) => ({
          organizationId: row.organization_id,
          keyId: row.id,
          action: 'key.expired',
          actor: SYSTEM_ACTOR,
          details: { expiration: new Date(row.expiration).toISOString() },
        })),
      );
      return rows.length;
    });
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }
}
