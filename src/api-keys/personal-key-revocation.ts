import { Inject, Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { UserLifecycle } from '../accounts/user-lifecycle';
import { actorOf } from '../audit/audit.service';
import { ApiKeysRepository } from './api-keys.repository';
import { KeyChangeRecorder } from './key-change-recorder';

/**
 * A personal key acts for its owner, so it is revoked when the owner is deactivated, in the
 * deactivation's own transaction (UserLifecycle), so no moment exists where the user is gone and their
 * keys still work. Its own provider: it is the one reaction of this module to another's event.
 */
@Injectable()
export class PersonalKeyRevocation {
  constructor(
    private readonly keys: ApiKeysRepository,
    private readonly changes: KeyChangeRecorder,
    @Inject(UserLifecycle) lifecycle: UserLifecycle,
  ) {
    lifecycle.onDeactivated((event, manager) =>
      this.revokePersonalKeys(manager, event.organizationId, event.userId, actorOf(event.actor)),
    );
  }

  /** Runs inside the deactivation transaction; the caller publishes the user invalidation after commit. */
  private async revokePersonalKeys(
    manager: EntityManager,
    organizationId: string,
    userId: string,
    actor: ReturnType<typeof actorOf>,
  ): Promise<void> {
    const revoked = await this.keys.lockLivePersonalKeys(manager, organizationId, userId);
    if (!revoked.length) return;
    await this.keys.revoke(
      manager,
      revoked.map((key) => key.id),
      'owner_deactivated',
    );
    await this.changes.record(
      manager,
      revoked.map((key) => ({
        key,
        action: 'key.revoked',
        actor,
        details: { reason: 'owner_deactivated', owner_id: userId },
      })),
    );
  }
}
