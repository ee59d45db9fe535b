import { createHash } from 'node:crypto';
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

type Hashable = Pick<
  AuditEntry,
  | 'id'
  | 'organizationId'
  | 'keyId'
  | 'action'
  | 'actorType'
  | 'actorId'
  | 'ip'
  | 'userAgent'
  | 'details'
  | 'createdAt'
>;

/** SHA-256 over the previous entry's hash and this entry's content. */
export function chainHash(previousHash: string, entry: Hashable): string {
  const content = canonical({
    id: entry.id,
    organization_id: entry.organizationId,
    key_id: entry.keyId,
    action: entry.action,
    actor_type: entry.actorType,
    actor_id: entry.actorId,
    ip: entry.ip,
    user_agent: entry.userAgent,
    details: entry.details,
    created_at: entry.createdAt.toISOString(),
  });
  return createHash('sha256').update(previousHash).update('\n').update(content).digest('hex');
}
