import { ConfigOf } from '../config/config-namespace';
import { auditConfig } from '../config/namespaces';
import { BeforeApplicationShutdown, Inject, Injectable, Logger } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, Repository } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import type { Principal } from '../access/principal';
import { newId } from '../common/ids';
import { Page, paginate } from '../common/pagination';
import { chainHash, GENESIS_HASH } from './audit-chain';
import { ActorType, AuditEntry } from './audit-entry.entity';
import { AuditQueryDto } from './dto/audit.dto';

export interface AuditActor {
  type: ActorType;
  id: string | null;
}

/** Where a request came from, for the audit trail. */
export interface RequestOrigin {
  ip: string | null;
  userAgent: string | null;
}

export interface AuditEvent {
  organizationId: string;
  keyId?: string | null;
  action: AuditAction;
  actor: AuditActor;
  origin?: RequestOrigin;
  details?: Record<string, unknown>;
}

/** Every action the audit log records; `GET /v1/audit-log?action=` takes one of them. */
export const AUDIT_ACTIONS = [
  'key.created',
  'key.updated',
  'key.rotated',
  'key.deleted',
  'key.revoked',
  'key.expiring',
  'key.expired',
  'key.disabled',
  'key.enabled',
  'key.credits_low',
  'key.denied',
  'webhook.created',
  'webhook.updated',
  'webhook.secret_rotated',
  'webhook.deleted',
  'webhook.disabled',
] as const;

export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export const SYSTEM_ACTOR: AuditActor = { type: 'system', id: null };

export function actorOf(principal: Principal): AuditActor {
  return principal.kind === 'api_key'
    ? { type: 'api_key', id: principal.apiKeyId }
    : { type: 'user', id: principal.userId };
}

/** One key refused for one reason: opened by a refusal written at once; `rest` coalesces the others. */
interface DenialWindow {
  openedAt: Date;
  rest?: { event: AuditEvent; count: number; firstAt: Date; lastAt: Date };
}

function withCount(event: AuditEvent, count: number, firstAt: Date, lastAt: Date): AuditEvent {
  return {
    ...event,
    details: { ...event.details, count, first_at: firstAt.toISOString(), last_at: lastAt.toISOString() },
  };
}

const FLUSH_DELAY_MS = 100;
const MAX_BATCH = 200;

/**
 * The audit trail. Management actions append inside their own transaction (`append`), so the change
 * and its record commit together. Events from the request path (`enqueue`, `recordDenial`) are
 * batched and written off the request, so a key check never waits on an insert. Entries of one
 * organization form a hash chain, appended under an advisory lock so instances never fork it.
 */
@Injectable()
export class AuditService implements BeforeApplicationShutdown {
  private readonly logger = new Logger('Audit');
  private queue: AuditEvent[] = [];
  private flushTimer?: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();
  private readonly denials = new Map<string, DenialWindow>();

  constructor(
    @InjectRepository(AuditEntry) private readonly entries: Repository<AuditEntry>,
    @Inject(auditConfig.KEY) private readonly config: ConfigOf<typeof auditConfig>,
  ) {}

  /** Appends in the caller's transaction. */
  async append(manager: EntityManager, events: AuditEvent[]): Promise<void> {
    const byOrganization = new Map<string, AuditEvent[]>();
    for (const event of events) {
      byOrganization.set(event.organizationId, [...(byOrganization.get(event.organizationId) ?? []), event]);
    }
    // A fixed lock order keeps two multi-organization batches from deadlocking.
    for (const organizationId of [...byOrganization.keys()].sort()) {
      await manager.query(`SELECT pg_advisory_xact_lock(hashtext('audit:' || $1))`, [organizationId]);
      const [last] = await manager.query<{ hash: string }[]>(
        `SELECT hash FROM audit_entries WHERE organization_id = $1 ORDER BY sequence DESC LIMIT 1`,
        [organizationId],
      );
      let previousHash = last?.hash ?? GENESIS_HASH;
      const rows: QueryDeepPartialEntity<AuditEntry>[] = [];
      for (const event of byOrganization.get(organizationId)!) {
        const row = {
          id: newId('auditEntry'),
          organizationId,
          keyId: event.keyId ?? null,
          action: event.action,
          actorType: event.actor.type,
          actorId: event.actor.id,
          ip: event.origin?.ip ?? null,
          userAgent: event.origin?.userAgent ?? null,
          details: event.details ?? {},
          createdAt: new Date(),
        };
        const hash = chainHash(previousHash, row);
        rows.push({
          ...row,
          details: row.details as QueryDeepPartialEntity<Record<string, unknown>>,
          previousHash,
          hash,
        });
        previousHash = hash;
      }
      await manager.insert(AuditEntry, rows);
    }
  }

  async appendNow(events: AuditEvent[]): Promise<void> {
    await this.entries.manager.transaction((manager) => this.append(manager, events));
  }

  /** Fire-and-forget from the request path; written within about 100 ms. */
  enqueue(event: AuditEvent): void {
    this.queue.push(event);
    if (this.queue.length >= MAX_BATCH) void this.flush();
    else if (!this.flushTimer) {
      this.flushTimer = setTimeout(() => void this.flush(), FLUSH_DELAY_MS);
      this.flushTimer.unref();
    }
  }

  /**
   * A refused use of a key. The first refusal of one key for one reason is written at once (an
   * operator looking for why a key is refused sees it within a second); the refusals after it, until
   * AUDIT_DENIAL_WINDOW_SECONDS (default a minute) have passed since that first one, are coalesced
   * into one more entry with their count, written when the window closes.
   */
  recordDenial(event: Omit<AuditEvent, 'action'> & { keyId: string; reason: string }): void {
    const id = `${event.keyId}:${event.reason}`;
    const now = new Date();
    const window = this.denials.get(id);
    const denied: AuditEvent = {
      ...event,
      action: 'key.denied',
      details: { ...event.details, reason: event.reason },
    };
    if (!window) {
      this.denials.set(id, { openedAt: now, rest: undefined });
      this.enqueue(withCount(denied, 1, now, now));
      return;
    }
    if (window.rest) {
      window.rest.count += 1;
      window.rest.lastAt = now;
    } else {
      window.rest = { event: denied, count: 1, firstAt: now, lastAt: now };
    }
  }

  /** Writes everything queued so far; resolves when it is in the database. */
  async flush(): Promise<void> {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const batch = this.queue;
    this.queue = [];
    this.flushing = this.flushing.then(async () => {
      if (!batch.length) return;
      try {
        await this.appendNow(batch);
      } catch (error) {
        // Losing an audit entry is bad, but failing the request that caused it would be worse.
        this.logger.error({ err: error, count: batch.length }, 'could not write audit entries');
      }
    });
    return this.flushing;
  }

  /** Closes due denial windows (all of them at shutdown) and writes their coalesced rest; returns how many closed. */
  async closeDenialWindows(all: boolean): Promise<number> {
    const windowMs = this.config.denialWindowSeconds * 1000;
    const now = Date.now();
    let closed = 0;
    for (const [id, window] of this.denials) {
      if (!all && now - window.openedAt.getTime() < windowMs) continue;
      this.denials.delete(id);
      closed += 1;
      const rest = window.rest;
      if (rest) this.enqueue(withCount(rest.event, rest.count, rest.firstAt, rest.lastAt));
    }
    if (all) await this.flush();
    return closed;
  }

  async list(organizationId: string, query: AuditQueryDto, keyId?: string): Promise<Page<AuditEntry>> {
    const builder = this.entries
      .createQueryBuilder('entry')
      .where('entry.organization_id = :organizationId', { organizationId });
    const key = keyId ?? query.key_id;
    if (key) builder.andWhere('entry.key_id = :key', { key });
    if (query.action) builder.andWhere('entry.action = :action', { action: query.action });
    return paginate(builder, query);
  }

  /** Recomputes the organization's chain; the first entry whose hash does not match is reported. */
  async verifyChain(
    organizationId: string,
  ): Promise<{ valid: boolean; entries: number; first_invalid_id: string | null }> {
    const rows = await this.entries.find({ where: { organizationId }, order: { sequence: 'ASC' } });
    let previousHash = GENESIS_HASH;
    for (const row of rows) {
      if (row.previousHash !== previousHash || chainHash(previousHash, row) !== row.hash) {
        return { valid: false, entries: rows.length, first_invalid_id: row.id };
      }
      previousHash = row.hash;
    }
    return { valid: true, entries: rows.length, first_invalid_id: null };
  }

  /**
   * Shutdown runs in three phases: workers finish or hand back their work (onModuleDestroy), buffers
   * are written (here), connections close (onApplicationShutdown, where TypeORM destroys its pool).
   * Flushing any later loses the entries: "Driver not Connected".
   */
  async beforeApplicationShutdown(): Promise<void> {
    await this.closeDenialWindows(true).catch((error: unknown) =>
      this.logger.error({ err: error }, 'could not write audit entries at shutdown'),
    );
  }
}
