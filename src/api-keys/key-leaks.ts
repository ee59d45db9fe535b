import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
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
import { PendingLeakReportsRepository } from './pending-leak-reports.repository';

/** One value a report says was found in public, and where (null: the report does not say). */
export interface ReportedValue {
  value: string;
  url: string | null;
}

/** A reported value by its hash (the form a key's value is stored in), and where it was found. */
interface HashedValue {
  hash: string;
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
 * every instance's key cache through the invalidation bus, as every other key change does. Public
 * reports are queued (queue) and applied after their answer (applyQueued), as the lookup's cost differs.
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
    private readonly pending: PendingLeakReportsRepository,
  ) {}

  /** Applies a report; answers, per value in order, whether it names a key that exists (not deleted). */
  async report(source: LeakSource, reported: ReportedValue[], origin?: RequestOrigin): Promise<boolean[]> {
    if (!reported.length) return [];
    const hashed = reported.map(({ value, url }) => ({ hash: this.values.hash(value), url }));
    const { named, changed } = await this.keys.transaction((manager) =>
      this.apply(manager, source, hashed, origin),
    );
    this.publishChanged(changed);
    return named;
  }

  /**
   * Stores a report to be applied after the caller has answered (applyQueued): hashing every value and
   * one INSERT, the same work whatever the values name, as nothing here reads a key. Once this returns
   * the report is durable, so it is applied even if this process stops right after answering.
   */
  async queue(source: LeakSource, values: string[], origin?: RequestOrigin): Promise<void> {
    await this.pending.add(
      source,
      values.map((value) => this.values.hash(value)),
      origin,
    );
  }

  /**
   * Applies the oldest queued report in the transaction that deletes it, so a report is applied once
   * however many instances drain the queue; false when none is left to take.
   */
  async applyQueued(): Promise<boolean> {
    const changed = await this.keys.transaction(async (manager) => {
      const report = await this.pending.claimOldest(manager);
      if (!report) return null;
      const hashed = report.valueHashes.map((hash) => ({ hash, url: null }));
      const origin = { ip: report.ip, userAgent: report.userAgent };
      const applied = await this.apply(manager, report.source, hashed, origin);
      await this.pending.delete(manager, report.id);
      return applied.changed;
    });
    if (!changed) return false;
    this.publishChanged(changed);
    return true;
  }

  /** After commit: every instance drops its cached record of a revoked or disabled key. */
  private publishChanged(keyIds: string[]): void {
    for (const keyId of keyIds) this.invalidations.publish({ kind: 'key', keyId });
  }

  private async apply(
    manager: EntityManager,
    source: LeakSource,
    reported: HashedValue[],
    origin: RequestOrigin | undefined,
  ): Promise<{ named: boolean[]; changed: string[] }> {
    const hashes = reported.map(({ hash }) => hash);
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
        (key.keyHash === hashes[i] || (key.previousKeyExpiresAt !== null && key.previousKeyExpiresAt > now));
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
  }
}
