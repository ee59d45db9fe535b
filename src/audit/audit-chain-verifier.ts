import { Inject, Injectable } from '@nestjs/common';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { ConfigOf } from '../config/config-namespace';
import { auditConfig } from '../config/namespaces';
import { AuditChainKey, Checkpoint, GENESIS_HASH, legacyLink } from './audit-chain';
import { AuditError, AuditErrorCode } from './audit.errors';
import { AuditRepository, ChainedRow } from './audit.repository';

/**
 * What is wrong with a chain, at the first place it goes wrong:
 * - `entry_altered`: `first_invalid_id` does not match its link (edited, forged or inserted, linked
 *   without the key, or an entry before it was deleted);
 * - `checkpoint_mismatch`: the entry at the checkpoint's place is not the one it signed;
 * - `entries_missing`: the chain ends before the entry its head (or the checkpoint given) names: its
 *   last entries were deleted;
 * - `head_mismatch`: the head kept beside the entries is not one this key signed, is missing while keyed
 *   entries exist, or names another entry than the chain's last.
 */
export type ChainProblem = 'entry_altered' | 'checkpoint_mismatch' | 'entries_missing' | 'head_mismatch';
export const CHAIN_PROBLEMS: readonly ChainProblem[] = [
  'entry_altered',
  'checkpoint_mismatch',
  'entries_missing',
  'head_mismatch',
];

export interface ChainVerification {
  valid: boolean;
  /** Entries in the chain, up to its end when the check began. */
  entries: number;
  /** Of them, written before the chain had a key (keyless SHA-256 links at its start). */
  legacy_entries: number;
  first_invalid_id: string | null;
  problem: ChainProblem | null;
  /** A checkpoint of the chain's last entry, signed, to keep elsewhere; null unless valid and not empty. */
  checkpoint: { entries: number; entry_id: string; created_at: string; token: string } | null;
}

/**
 * Verifies an organization's audit chain from its first entry to the end it had when the check began
 * (entries appended meanwhile are the next check's), a page at a time: memory stays that of one page
 * whatever the log's length, each statement reads one short index range, and the event loop gets a
 * turn between pages, so a long log neither runs into the statement deadline nor holds up the process.
 */
@Injectable()
export class AuditChainVerifier {
  constructor(
    private readonly entries: AuditRepository,
    private readonly key: AuditChainKey,
    @Inject(auditConfig.KEY) private readonly config: ConfigOf<typeof auditConfig>,
  ) {}

  async verify(organizationId: string, checkpointToken?: string): Promise<ChainVerification> {
    const checkpoint =
      checkpointToken === undefined ? undefined : this.checkpointOf(organizationId, checkpointToken);
    const { lastSequence, head } = await this.entries.chainEnd(organizationId);
    const pageSize = this.config.integrityPageSize;
    let previousHash = GENESIS_HASH;
    let entries = 0;
    let legacyEntries = 0;
    let keyedSeen = false;
    let checkpointMet = false;
    let last: ChainedRow | undefined;
    let failure: { problem: ChainProblem; id: string | null } | undefined;

    let after = '0';
    while (lastSequence !== null) {
      const page = await this.entries.chainPage(organizationId, after, lastSequence, pageSize);
      for (const row of page) {
        entries += 1;
        if (!row.keyed) legacyEntries += 1;
        // Past the first failure the rest is only counted: one broken link says the chain is broken.
        if (failure) continue;
        // Keyless links are the legacy start of a chain only: one after a keyed entry is a forgery.
        const link = row.keyed
          ? this.key.link(previousHash, row)
          : keyedSeen
            ? undefined
            : legacyLink(previousHash, row);
        if (row.previousHash !== previousHash || link !== row.hash) {
          failure = { problem: 'entry_altered', id: row.id };
          continue;
        }
        keyedSeen ||= row.keyed;
        if (checkpoint && entries === checkpoint.entries) {
          if (row.id === checkpoint.entryId && row.hash === checkpoint.hash) checkpointMet = true;
          else failure = { problem: 'checkpoint_mismatch', id: row.id };
        }
        previousHash = row.hash;
        last = row;
      }
      if (page.length < pageSize) break;
      after = page[page.length - 1].sequence;
      await nextTurn();
    }

    failure ??= this.endFailure({ checkpoint, checkpointMet, head, last, keyedSeen });
    return {
      valid: !failure,
      entries,
      legacy_entries: legacyEntries,
      first_invalid_id: failure?.id ?? null,
      problem: failure?.problem ?? null,
      checkpoint:
        failure || !last
          ? null
          : {
              entries,
              entry_id: last.id,
              created_at: last.createdAt.toISOString(),
              token: this.key.checkpointToken(organizationId, { entries, entryId: last.id, hash: last.hash }),
            },
    };
  }

  /** Whether the chain, every link of it sound, also ends where its head and the checkpoint say. */
  private endFailure({
    checkpoint,
    checkpointMet,
    head,
    last,
    keyedSeen,
  }: {
    checkpoint?: Checkpoint;
    checkpointMet: boolean;
    head?: Awaited<ReturnType<AuditRepository['chainEnd']>>['head'];
    last?: ChainedRow;
    keyedSeen: boolean;
  }): { problem: ChainProblem; id: null } | undefined {
    if (checkpoint && !checkpointMet) return { problem: 'entries_missing', id: null };
    // No head: a chain not appended to since the key came (legacy entries only, or none). Keyed entries
    // without one mean it was deleted.
    if (!head) return keyedSeen ? { problem: 'head_mismatch', id: null } : undefined;
    if (!this.key.headIsGenuine(head)) return { problem: 'head_mismatch', id: null };
    if (!last || BigInt(last.sequence) < BigInt(head.sequence))
      return { problem: 'entries_missing', id: null };
    // Entries past the head, each link sound: an earlier head put back (the last entries are still there).
    if (last.id !== head.entryId || last.hash !== head.hash) return { problem: 'head_mismatch', id: null };
    return undefined;
  }

  private checkpointOf(organizationId: string, token: string): Checkpoint {
    const checkpoint = this.key.readCheckpoint(organizationId, token);
    if (!checkpoint) {
      throw new AuditError(
        AuditErrorCode.InvalidCheckpoint,
        "The checkpoint is not one this service signed for this organization's audit log.",
        { errors: [{ field: 'checkpoint', message: 'checkpoint is invalid' }] },
      );
    }
    return checkpoint;
  }
}
