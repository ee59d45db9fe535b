import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';

/** How many keys (not deleted) name each of `identityIds`; with `manager`, in the caller's transaction. */
export type IdentityKeyCounter = (
  organizationId: string,
  identityIds: string[],
  manager?: EntityManager,
) => Promise<Map<string, number>>;

/**
 * Which keys name an identity is known by the api-keys module, which sits above this one: it registers
 * its count here, so identities read no table of theirs (as RoleHolders does for roles).
 */
@Injectable()
export class IdentityKeys {
  private counter?: IdentityKeyCounter;

  register(counter: IdentityKeyCounter): void {
    this.counter = counter;
  }

  async counts(
    organizationId: string,
    identityIds: string[],
    manager?: EntityManager,
  ): Promise<Map<string, number>> {
    if (!this.counter || !identityIds.length) return new Map();
    return this.counter(organizationId, identityIds, manager);
  }
}
