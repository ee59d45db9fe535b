import { randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { GENESIS_HASH, legacyLink } from '../../src/audit/audit-chain';

/**
 * What an attacker with write access to the database (and not AUDIT_CHAIN_SECRET) can do to the audit
 * log, in plain SQL: the rows as stored, rewritten with the only link they can compute, keyless SHA-256.
 */

export interface StoredEntry {
  id: string;
  sequence: string;
  organization_id: string;
  key_id: string | null;
  action: string;
  actor_type: 'user' | 'api_key' | 'system';
  actor_id: string | null;
  ip: string | null;
  user_agent: string | null;
  details: Record<string, unknown>;
  /** Absent in a schema from before OAuth clients were audited. */
  actor_client_id?: string | null;
  created_at: Date;
  previous_hash: string;
  hash: string;
  keyed: boolean;
}

export function storedEntries(dataSource: DataSource, organizationId: string): Promise<StoredEntry[]> {
  // Every column, whatever the schema's version: pg gives a bigint as text.
  return dataSource.query(`SELECT * FROM audit_entries WHERE organization_id = $1 ORDER BY sequence`, [
    organizationId,
  ]);
}

/** The keyless link of a stored row after `previousHash`, as the chain was before it had a key. */
export function keylessLink(previousHash: string, row: StoredEntry): string {
  return legacyLink(previousHash, {
    id: row.id,
    organizationId: row.organization_id,
    keyId: row.key_id,
    action: row.action,
    actorType: row.actor_type,
    actorId: row.actor_id,
    actorClientId: row.actor_client_id ?? null,
    ip: row.ip,
    userAgent: row.user_agent,
    details: row.details,
    createdAt: row.created_at,
  });
}

/**
 * Recomputes every link from `rows[from]` on with keyless SHA-256 (each row's previous_hash and hash),
 * as the old chain let anyone do after changing an entry; `keyed` is left as it was unless told.
 */
export async function relinkWithoutKey(
  dataSource: DataSource,
  rows: StoredEntry[],
  from: number,
  options: { markLegacy?: boolean } = {},
): Promise<void> {
  let previousHash = from === 0 ? GENESIS_HASH : rows[from - 1].hash;
  for (const row of rows.slice(from)) {
    const hash = keylessLink(previousHash, row);
    await dataSource.query(
      options.markLegacy
        ? `UPDATE audit_entries SET previous_hash = $2, hash = $3, keyed = false WHERE id = $1`
        : `UPDATE audit_entries SET previous_hash = $2, hash = $3 WHERE id = $1`,
      [row.id, previousHash, hash],
    );
    Object.assign(row, { previous_hash: previousHash, hash, keyed: row.keyed && !options.markLegacy });
    previousHash = hash;
  }
}

/** Inserts an entry after `after` (given sequence, or the next free one), linked to it without the key. */
export async function forgeEntry(
  dataSource: DataSource,
  after: StoredEntry,
  fields: { id: string; sequence?: string; keyed?: boolean; details?: Record<string, unknown> },
): Promise<StoredEntry> {
  const forged: StoredEntry = {
    ...after,
    id: fields.id,
    sequence: fields.sequence ?? '',
    action: 'key.updated',
    details: fields.details ?? { forged: true },
    created_at: new Date(after.created_at.getTime() + 1),
    previous_hash: after.hash,
    keyed: fields.keyed ?? false,
    hash: '',
  };
  // Keyed or not, the only links the attacker can make: keyless SHA-256, or a guess at the HMAC.
  forged.hash = forged.keyed ? randomBytes(32).toString('hex') : keylessLink(after.hash, forged);
  const row: Record<string, unknown> = {
    id: forged.id,
    organization_id: forged.organization_id,
    key_id: forged.key_id,
    action: forged.action,
    actor_type: forged.actor_type,
    actor_id: forged.actor_id,
    ip: forged.ip,
    user_agent: forged.user_agent,
    details: JSON.stringify(forged.details),
    created_at: forged.created_at,
    previous_hash: forged.previous_hash,
    hash: forged.hash,
    // A schema from before the key has no such column.
    ...('keyed' in after ? { keyed: forged.keyed } : {}),
    ...(fields.sequence ? { sequence: fields.sequence } : {}),
  };
  const columns = Object.keys(row);
  const [{ sequence }] = await dataSource.query<{ sequence: string }[]>(
    `INSERT INTO audit_entries (${columns.join(', ')}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')})
     RETURNING sequence::text AS sequence`,
    Object.values(row),
  );
  forged.sequence = sequence;
  return forged;
}

/** Takes a sequence number nobody uses, so the next entry leaves a gap a forged one can fill. */
export async function skipSequence(dataSource: DataSource): Promise<void> {
  await dataSource.query(`SELECT nextval(pg_get_serial_sequence('audit_entries', 'sequence'))`);
}

/**
 * `count` entries as the service wrote them before the chain had a key: keyless links, `keyed` false,
 * no head. What a log upgraded from that version holds.
 */
export async function writeLegacyEntries(
  dataSource: DataSource,
  organizationId: string,
  count: number,
): Promise<StoredEntry[]> {
  let previousHash = GENESIS_HASH;
  const start = Date.now() - 60_000;
  for (let n = 0; n < count; n++) {
    const row = {
      id: `aud_legacy${randomBytes(8).toString('hex')}`,
      organization_id: organizationId,
      key_id: null,
      action: 'key.created',
      actor_type: 'system',
      actor_id: null,
      ip: null,
      user_agent: null,
      details: { legacy: n },
      created_at: new Date(start + n),
      previous_hash: previousHash,
    } as Omit<StoredEntry, 'sequence' | 'hash' | 'keyed'> as StoredEntry;
    const hash = keylessLink(previousHash, row);
    await dataSource.query(
      `INSERT INTO audit_entries (id, organization_id, key_id, action, actor_type, actor_id, ip, user_agent,
                                  details, created_at, previous_hash, hash, keyed)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, false)`,
      [
        row.id,
        organizationId,
        row.key_id,
        row.action,
        row.actor_type,
        row.actor_id,
        row.ip,
        row.user_agent,
        JSON.stringify(row.details),
        row.created_at,
        previousHash,
        hash,
      ],
    );
    previousHash = hash;
  }
  return storedEntries(dataSource, organizationId);
}
