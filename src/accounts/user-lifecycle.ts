import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { Principal } from '../access/principal';

export type UserDeactivatedListener = (
  event: { organizationId: string; userId: string; actor: Principal },
  manager: EntityManager,
) => Promise<void>;

/**
 * Lets other modules react to account changes inside the same transaction (API keys revoke a
 * deactivated user's personal keys) without the accounts module depending on them.
 */
@Injectable()
export class UserLifecycle {
  private readonly deactivatedListeners: UserDeactivatedListener[] = [];

  onDeactivated(listener: UserDeactivatedListener): void {
    this.deactivatedListeners.push(listener);
  }

  async userDeactivated(
    event: Parameters<UserDeactivatedListener>[0],
    manager: EntityManager,
  ): Promise<void> {
    for (const listener of this.deactivatedListeners) await listener(event, manager);
  }
}
