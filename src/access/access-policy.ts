import { Injectable, OnModuleInit } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import type { AccessAttempt, AccessStep, StepOutcome } from './access-attempt';

/**
 * Marks an injectable `AccessStep` of any module as a policy of the key check: it runs for every
 * protected request after the permission step and before the rate limit, so what it refuses spends
 * no budget. Declare its refusal codes with `defineAccessDenial`. See README, "Extending".
 *
 *   @AccessPolicy()
 *   @Injectable()
 *   export class MaintenanceWindowPolicy implements AccessStep { async check(attempt) { ... } }
 */
export const AccessPolicy = DiscoveryService.createDecorator<void>();

/** The policies found in the application, run in the order their modules were registered. */
@Injectable()
export class AccessPolicies implements OnModuleInit, AccessStep {
  private policies: AccessStep[] = [];

  constructor(private readonly discovery: DiscoveryService) {}

  onModuleInit(): void {
    this.policies = this.discovery
      .getProviders({ metadataKey: AccessPolicy.KEY })
      .map((wrapper) => wrapper.instance as AccessStep)
      .filter((policy) => typeof policy?.check === 'function');
  }

  async check(attempt: AccessAttempt): Promise<StepOutcome> {
    for (const policy of this.policies) {
      const denial = await policy.check(attempt);
      if (denial) return denial;
    }
    return undefined;
  }
}
