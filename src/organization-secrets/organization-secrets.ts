import { Injectable } from '@nestjs/common';
import { Clock } from '../common/clock';
import { isIdOf } from '../common/ids';
import { ORGANIZATION_SECRET_ID } from './organization-secrets.declarations';
import { OrganizationSecretsRepository } from './organization-secrets.repository';
import { SecretSealer } from './secret-sealer';

/** last_used_at is written at most this often per secret, however many runs open it. */
const LAST_USED_RESOLUTION_MS = 60_000;

/**
 * What other modules (the model-agent runner) may do with an organization's secrets: check that one
 * exists and open its value for a run. Nothing here returns a value to an API response; callers send
 * it upstream and nowhere else (not in a log line, an event, a task or an error).
 */
@Injectable()
export class OrganizationSecrets {
  constructor(
    private readonly secrets: OrganizationSecretsRepository,
    private readonly sealer: SecretSealer,
    private readonly clock: Clock,
  ) {}

  /** Reveals under way, by organization and secret: runs that start together share one. */
  private readonly revealing = new Map<string, Promise<string | undefined>>();

  /**
   * The secret's value, opened for a run, and last_used_at stamped (once a minute at most). Undefined
   * when the id is unknown or another organization's, both alike. Single-flight: the runs of one agent
   * claimed together share one read, and nothing is kept once it answers, so a value replaced or a
   * secret deleted applies to the next run.
   */
  reveal(organizationId: string, secretId: string): Promise<string | undefined> {
    const key = `${organizationId}/${secretId}`;
    let revealed = this.revealing.get(key);
    if (!revealed) {
      revealed = this.readAndMark(organizationId, secretId).finally(() => this.revealing.delete(key));
      this.revealing.set(key, revealed);
    }
    return revealed;
  }

  private async readAndMark(organizationId: string, secretId: string): Promise<string | undefined> {
    if (!isIdOf(ORGANIZATION_SECRET_ID, secretId)) return undefined;
    const secret = await this.secrets.findInOrganization(organizationId, secretId);
    if (!secret) return undefined;
    const value = await this.sealer.open(secret);
    const now = this.clock.date();
    if (!secret.lastUsedAt || now.getTime() - secret.lastUsedAt.getTime() >= LAST_USED_RESOLUTION_MS) {
      await this.secrets.markUsed(
        organizationId,
        secretId,
        now,
        new Date(now.getTime() - LAST_USED_RESOLUTION_MS),
      );
    }
    return value;
  }

  /** Whether the organization has this secret (an agent's config naming it is valid), without opening it. */
  async exists(organizationId: string, secretId: string): Promise<boolean> {
    if (!isIdOf(ORGANIZATION_SECRET_ID, secretId)) return false;
    return (await this.secrets.findInOrganization(organizationId, secretId)) !== null;
  }
}
