import { Injectable } from '@nestjs/common';
import { RequestOrigin, SYSTEM_ACTOR } from '../audit/audit.service';
import { InvalidationBus } from '../cache-invalidation/invalidation-bus';
import { Clock } from '../common/clock';
import { OrganizationPoliciesService } from '../organization-policies/organization-policies.service';
import type { LeakResponse } from '../organization-policies/organization-policy.entity';
import { ApiKeyValues } from './api-key-format';
import type { LeakAction, LeakSource } from './api-key-leak.entity';
import { ApiKey, keyStatus } from './api-key.entity';
import { ApiKeysRepository, leakPair, NewKeyLeak } from './api-keys.repository';
import { KeyChange, KeyChangeRecorder } from './key-change-recorder';

/** One value a report says was found in public, and where (null: the report does not say). */
export interface ReportedValue {
  value: string;
  url: string | null;
}

const ACTION_OF: Record<LeakResponse, LeakAction> = {
  revoke: 'revoked',
  disable: 'disabled',
  notify: 'none',
};

/** Audit entries and events written per statement (each row binds about a dozen parameters). */
const RECORD_SLICE = 500;

/** Revocation reason of a key revoked for a leak; the key check names it in its 401. */
export const LEAKED = 'leaked';

/**
 * What a leak report does (GitHub secret scanning, POST /v1/credentials/revoke): every value is hashed
 * and the whole report looked up in one query, whatever it holds, so the work is the same per value
 * whether it names a key or not. Each key named that is still active gets its organization's
 * leak_response; each (key, source URL) not reported before records `key.leaked` (audit and webhook),
 * and a second report of the same key at the same URL changes nothing. Revocations and disables reach
 * every instance's key cache through the invalidation bus, as every other key change does.
 */
@Injectable()
export class KeyLeaks {
  constructor(
    private readonly keys: ApiKeysRepository,
    private readonly values: ApiKeyValues,
    private readonly policies: OrganizationPoliciesService,
    private readonly changes: KeyChangeRecorder,
    private readonly invalidations: InvalidationBus,
    private readonly clock: Clock,
  ) {}

  /** Applies a report; answers, per value in order, whether it names a key that exists (not deleted). */
  async report(source: LeakSource, reported: ReportedValue[], origin?: RequestOrigin): Promise<boolean[]> {
    if (!reported.length) return [];
    const hashes = reported.map(({ value }) => this.values.hash(value));
    const { named, changed } = await this.keys.transaction(async (manager) => {
      const found = await this.keys.lockByValueHashes(manager, [...new Set(hashes)]);
      const byHash = new Map<string, ApiKey>();
      for (const key of found) {
        byHash.set(key.keyHash, key);
        if (key.previousKeyHash) byHash.set(key.previousKeyHash, key);
      }
      const named = hashes.map((hash) => byHash.has(hash));
      if (!found.length) return { named, changed: [] as string[] };

      const already = await this.keys.reportedLeaks(
        manager,
        found.map((key) => key.id),
      );
      const policies = await this.policies.forOrganizations(
        found.map((key) => key.organizationId),
        manager,
      );
      const now = this.clock.date();
      const leaks: NewKeyLeak[] = [];
      const records: KeyChange[] = [];
      const toRevoke: ApiKey[] = [];
      const toDisable: ApiKey[] = [];
      reported.forEach(({ url }, i) => {
        const key = byHash.get(hashes[i]);
        const sourceUrl = url ?? '';
        if (!key || already.has(leakPair(key.id, sourceUrl))) return;
        already.add(leakPair(key.id, sourceUrl));
        // Only a value that works now puts the key at risk: a rotated-out value past its grace period
        // is refused anyway, and revoking the key for it would only cut off its current value.
        const live =
          keyStatus(key, now) === 'active' &&
          (key.keyHash === hashes[i] ||
            (key.previousKeyExpiresAt !== null && key.previousKeyExpiresAt > now));
        const response = policies.get(key.organizationId)!.leakResponse;
        const action: LeakAction = live ? ACTION_OF[response] : 'none';
        if (action === 'revoked') {
          key.revokedAt = now;
          key.revokedReason = LEAKED;
          toRevoke.push(key);
          records.push({
            key,
            action: 'key.revoked',
            actor: SYSTEM_ACTOR,
            origin,
            details: { reason: LEAKED },
          });
        } else if (action === 'disabled') {
          key.enabled = false;
          toDisable.push(key);
          records.push({
            key,
            action: 'key.disabled',
            actor: SYSTEM_ACTOR,
            origin,
            details: { enabled: false },
          });
        }
        leaks.push({
          keyId: key.id,
          organizationId: key.organizationId,
          sourceUrl,
          source,
          actionTaken: action,
        });
        records.push({
          key,
          action: 'key.leaked',
          actor: SYSTEM_ACTOR,
          origin,
          details: { source, url, action_taken: action },
        });
      });
      if (toRevoke.length) {
        await this.keys.revoke(
          manager,
          toRevoke.map((key) => key.id),
          LEAKED,
        );
      }
      if (toDisable.length) {
        await this.keys.disable(
          manager,
          toDisable.map((key) => key.id),
        );
      }
      await this.keys.insertLeaks(manager, leaks);
      // In slices: one insert of a whole report's entries would pass PostgreSQL's 65,535 parameters.
      for (let i = 0; i < records.length; i += RECORD_SLICE) {
        await this.changes.record(manager, records.slice(i, i + RECORD_SLICE));
      }
      return { named, changed: [...toRevoke, ...toDisable].map((key) => key.id) };
    });
    // After commit: every instance drops its cached record of a revoked or disabled key.
    for (const keyId of changed) this.invalidations.publish({ kind: 'key', keyId });
    return named;
  }
}
