import { ConfigOf } from '../config/config-namespace';
import { apiKeysConfig } from '../config/namespaces';
import { Inject, Injectable } from '@nestjs/common';
import { PeriodicJob } from '../scheduling/periodic-job';
import { SYSTEM_ACTOR } from '../audit/audit.service';
import { InvalidationBus } from '../cache-invalidation/invalidation-bus';
import { ApiKeysRepository } from './api-keys.repository';
import { ApiKeyRotationService } from './api-key-rotation.service';

/**
 * Rotation policies: every ROTATION_SCAN_SECONDS, keys whose `next_rotation_at` has passed are
 * rotated with their policy's grace period. The new value goes only into the sealed `key.rotated`
 * event for the organization's webhooks. Rows are claimed with FOR UPDATE SKIP LOCKED and moved to
 * their next date in the same transaction, so one rotation happens once across instances, and a
 * scan at start catches up on rotations missed while no instance ran.
 */
@Injectable()
export class KeyRotationJob extends PeriodicJob {
  protected readonly jobName = 'key-rotation';

  constructor(
    @Inject(apiKeysConfig.KEY) private readonly config: ConfigOf<typeof apiKeysConfig>,
    private readonly repository: ApiKeysRepository,
    private readonly rotation: ApiKeyRotationService,
    private readonly invalidations: InvalidationBus,
  ) {
    super();
  }

  protected intervalMs(): number {
    return this.config.rotationScanSeconds * 1000;
  }

  /** Returns how many keys were rotated. */
  protected run(): Promise<number> {
    return this.rotateDue();
  }

  private async rotateDue(): Promise<number> {
    const rotated = await this.repository.transaction(async (manager) => {
      const due = await this.repository.claimDueRotations(manager);
      for (const key of due)
        await this.rotation.rotateInTransaction(manager, key, key.rotationGraceSeconds, SYSTEM_ACTOR);
      return due.map((key) => key.id);
    });
    for (const keyId of rotated) this.invalidations.publish({ kind: 'key', keyId });
    return rotated.length;
  }
}
