import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';

/**
 * Whether something of the organization (an agent's config, say) names the secret now. `manager` is the
 * deleting transaction's (the secret's row locked): query through it, since on PGlite's one connection a
 * query beside the transaction waits for it to end.
 */
export type SecretReferenceCheck = (
  organizationId: string,
  secretId: string,
  manager?: EntityManager,
) => Promise<boolean>;

/**
 * Who uses a secret, asked without this module knowing who can: a module that names secrets (the
 * model agents) registers a check when it starts, and deleting a secret is refused (409 secret_in_use)
 * while any check says it is in use. A module imports OrganizationSecretsModule and calls `register`
 * from its `onModuleInit`; the registry is one instance per process.
 */
@Injectable()
export class SecretReferences {
  private readonly checks: SecretReferenceCheck[] = [];

  /** Adds a check consulted by every DELETE /v1/secrets/{id}; register once, at startup. */
  register(check: SecretReferenceCheck): void {
    this.checks.push(check);
  }

  /** True when any registered check says the organization's secret is named somewhere. */
  async inUse(organizationId: string, secretId: string, manager?: EntityManager): Promise<boolean> {
    for (const check of this.checks) {
      if (await check(organizationId, secretId, manager)) return true;
    }
    return false;
  }
}
