import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { SYSTEM_ACTOR } from '../audit/audit.service';
import { InvalidationBus } from '../cache-invalidation/invalidation-bus';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { ApiKey } from './api-key.entity';
import { ApiKeysService } from './api-keys.service';

/**
 * Rotation policies: every ROTATION_SCAN_SECONDS, keys whose `next_rotation_at` has passed are
 * rotated with their policy's grace period. The new value goes only into the sealed `key.rotated`
 * event for the organization's webhooks. Rows are claimed with FOR UPDATE SKIP LOCKED and moved to
 * their next date in the same transaction, so one rotation happens once across instances, and a
 * scan at start catches up on rotations missed while no instance ran.
 */
@Injectable()
export class KeyRotationJob implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('KeyRotation');
  private timer?: NodeJS.Timeout;
  private running?: Promise<number>;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly dataSource: DataSource,
    private readonly keys: ApiKeysService,
    private readonly invalidations: InvalidationBus,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.runOnce(), this.config.ROTATION_SCAN_SECONDS * 1000);
    this.timer.unref();
    void this.runOnce();
  }

  /** Returns how many keys were rotated. */
  runOnce(): Promise<number> {
    this.running ??= this.rotateDue()
      .catch((error: unknown) => {
        this.logger.warn(`rotation scan failed: ${(error as Error).message}`);
        return 0;
      })
      .finally(() => (this.running = undefined));
    return this.running;
  }

  private async rotateDue(): Promise<number> {
    const rotated = await this.dataSource.transaction(async (manager) => {
      const due = await manager
        .createQueryBuilder(ApiKey, 'key')
        .where('key.rotation_enabled AND key.next_rotation_at <= now()')
        .andWhere('key.revoked_at IS NULL AND key.deleted_at IS NULL')
        .andWhere('(key.expiration IS NULL OR key.expiration > now())')
        .orderBy('key.next_rotation_at', 'ASC')
        .limit(100)
        .setLock('pessimistic_write')
        .setOnLocked('skip_locked')
        .getMany();
      for (const key of due)
        await this.keys.rotateInTransaction(manager, key, key.rotationGraceSeconds, SYSTEM_ACTOR);
      return due.map((key) => key.id);
    });
    for (const keyId of rotated) this.invalidations.publish({ kind: 'key', keyId });
    return rotated.length;
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }
}
