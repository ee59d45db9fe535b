import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { AuditEntry } from './audit-entry.entity';

export const GENESIS_HASH = '0'.repeat(64);

/** JSON with object keys sorted at every level: jsonb reorders keys, the hash must not care. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

export type Chained = Pick<
  AuditEntry,
  | 'id'
  | 'organizationId'
  | 'keyId'
  | 'action'
  | 'actorType'
  | 'actorId'
  | 'actorClientId'
  | 'ip'
  | 'userAgent'
  | 'details'
  | 'createdAt'
>;

function contentOf(entry: Chained): string {
  return canonical({
    id: entry.id,
    organization_id: entry.organizationId,
    key_id: entry.keyId,
    action: entry.action,
    actor_type: entry.actorType,
    actor_id: entry.actorId,
    // Only when set: an entry without one (every entry before OAuth) keeps the content it was linked with.
    ...(entry.actorClientId ? { actor_client_id: entry.actorClientId } : {}),
    ip: entry.ip,
    user_agent: entry.userAgent,
    details: entry.details,
    created_at: entry.createdAt.toISOString(),
  });
}

/**
 * The link of an entry written before AUDIT_CHAIN_SECRET existed: SHA-256 over the previous link and
 * the content. Anyone can recompute it, so on its own it proves nothing against someone who can write
 * to the database; such entries are only read (as the chain's legacy start), never written any more.
 */
export function legacyLink(previousHash: string, entry: Chained): string {
  return createHash('sha256').update(previousHash).update('\n').update(contentOf(entry)).digest('hex');
}

/** The chain's last entry, as the head row beside the entries records it. */
export interface ChainHead {
  organizationId: string;
  /** audit_entries.sequence of that entry (a bigint, as text). */
  sequence: string;
  entryId: string;
  hash: string;
}

/** A signed checkpoint, as an operator keeps it and hands it back: its entry, its place, its link. */
export interface Checkpoint {
  /** How many entries the chain held up to and including the checkpoint's entry. */
  entries: number;
  entryId: string;
  hash: string;
}

const CHECKPOINT_VERSION = 'c1';
const CHECKPOINT = /^c1\.([1-9]\d{0,15})\.([a-z]{2,12}_[0-9A-Za-z]{1,40})\.([\w-]{43})\.([\w-]{43})$/;
/** What `?checkpoint=` must look like (its signature is checked after). */
export const CHECKPOINT_PATTERN = CHECKPOINT;

/**
 * HMAC-SHA256 under AUDIT_CHAIN_SECRET, the one secret the database does not hold: the link of each
 * entry (its content and the previous link), the head row that says where the chain ends, and the
 * checkpoints an operator exports. Each use has its own label, so a value made for one can never pass
 * for another.
 */
export class AuditChainKey {
  constructor(private readonly secret: string) {}

  private mac(label: string, ...parts: string[]): Buffer {
    const hmac = createHmac('sha256', this.secret).update(label);
    for (const part of parts) hmac.update('\n').update(part);
    return hmac.digest();
  }

  /** The link of an entry: HMAC over the previous entry's link and this entry's content. */
  link(previousHash: string, entry: Chained): string {
    return this.mac('gatehouse-audit-entry-v1', previousHash, contentOf(entry)).toString('hex');
  }

  headMac(head: ChainHead): string {
    return this.mac(
      'gatehouse-audit-head-v1',
      head.organizationId,
      head.sequence,
      head.entryId,
      head.hash,
    ).toString('hex');
  }

  headIsGenuine(head: ChainHead & { mac: string }): boolean {
    return equal(Buffer.from(head.mac, 'utf8'), Buffer.from(this.headMac(head), 'utf8'));
  }

  private checkpointMac(organizationId: string, checkpoint: Checkpoint): Buffer {
    return this.mac(
      'gatehouse-audit-checkpoint-v1',
      organizationId,
      String(checkpoint.entries),
      checkpoint.entryId,
      checkpoint.hash,
    );
  }

  /** An opaque token (`c1.<entries>.<entry id>.<link>.<signature>`) that `?checkpoint=` takes back. */
  checkpointToken(organizationId: string, checkpoint: Checkpoint): string {
    const link = Buffer.from(checkpoint.hash, 'hex').toString('base64url');
    const signature = this.checkpointMac(organizationId, checkpoint).toString('base64url');
    return [CHECKPOINT_VERSION, checkpoint.entries, checkpoint.entryId, link, signature].join('.');
  }

  /** The checkpoint a token holds, if this key signed it for this organization; undefined otherwise. */
  readCheckpoint(organizationId: string, token: string): Checkpoint | undefined {
    const match = CHECKPOINT.exec(token);
    if (!match) return undefined;
    const link = Buffer.from(match[3], 'base64url');
    const checkpoint = { entries: Number(match[1]), entryId: match[2], hash: link.toString('hex') };
    if (link.length !== 32 || !Number.isSafeInteger(checkpoint.entries)) return undefined;
    const signed = this.checkpointMac(organizationId, checkpoint);
    return equal(Buffer.from(match[4], 'base64url'), signed) ? checkpoint : undefined;
  }
}

function equal(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
