import { Injectable, OnModuleInit } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { AccessAttempt, AccessStep, StepOutcome } from './access-attempt';

/** Where a policy sits among the others: by `order` (lower first), then by class name. */
export interface AccessPolicyOptions {
  /** Default 0. Policies of equal order run by class name, so the order never depends on module order. */
  order?: number;
}

/**
 * Marks an injectable `AccessStep` of any module as a policy of the key check: it runs for every
 * protected request in the `policies` step, after the permission step and before the rate limit, so
 * what it refuses spends no budget. Declare its refusal codes with `defineAccessDenial` and document
 * them in the extension's own README.md (docs/extending.md).
 *
 *   @AccessPolicy({ order: 10 })
 *   @Injectable()
 *   export class MaintenanceWindowPolicy implements AccessStep { check(attempt) { ... } }
 */
export const AccessPolicy = DiscoveryService.createDecorator<AccessPolicyOptions>();

/** A policy found in the application, with its position. */
export interface PlacedPolicy {
  name: string;
  order: number;
  policy: AccessStep;
}

/** The `policies` step: the application's @AccessPolicy steps, by order then name. */
@Injectable()
export class AccessPolicies implements OnModuleInit, AccessStep {
  private policies: readonly AccessStep[] = [];
  private placed: readonly PlacedPolicy[] = [];

  constructor(private readonly discovery: DiscoveryService) {}

  onModuleInit(): void {
    this.placed = this.discovery
      .getProviders({ metadataKey: AccessPolicy.KEY })
      .filter((wrapper) => typeof (wrapper.instance as AccessStep | undefined)?.check === 'function')
      .map((wrapper) => {
        const name = wrapper.metatype?.name ?? String(wrapper.name);
        const order = this.discovery.getMetadataByDecorator(AccessPolicy, wrapper)?.order ?? 0;
        // NaN would make the sort, so the order of the key check, depend on the engine.
        if (!Number.isFinite(order)) throw new Error(`@AccessPolicy({ order }) of ${name} is not a number`);
        return { name, order, policy: wrapper.instance as AccessStep };
      })
      .sort((a, b) => a.order - b.order || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    this.policies = this.placed.map(({ policy }) => policy);
  }

  /** The policies in the order they run (README, "Extending"; test/access-check.e2e-spec.ts). */
  get inOrder(): readonly PlacedPolicy[] {
    return this.placed;
  }

  /**
   * The first refusal of the policies, in their order (KeyCheck.authorize's step 4): directly while they
   * answer directly (none is registered by default), a promise from the first that waits.
   */
  check(attempt: AccessAttempt): StepOutcome | Promise<StepOutcome> {
    return this.checkFrom(attempt, 0);
  }

  private checkFrom(attempt: AccessAttempt, from: number): StepOutcome | Promise<StepOutcome> {
    for (let i = from; i < this.policies.length; i++) {
      const denial = this.policies[i].check(attempt);
      if (denial instanceof Promise) return denial.then((known) => known ?? this.checkFrom(attempt, i + 1));
      if (denial) return denial;
    }
    return undefined;
  }
}
