import { ConfigOf } from '../config/config-namespace';
import { auditConfig, lifecycleConfig } from '../config/namespaces';
import { BeforeApplicationShutdown, Inject, Injectable, Logger } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import type { Principal } from '../access/principal';
import { newId } from '../common/ids';
import { AUDIT_ENTRY_ID } from './audit.declarations';
import { Page } from '../common/pagination';
import { WriteBacklog } from '../database/write-backlog';
import { MetricsService } from '../metrics/metrics.service';
import { AuditChainKey, GENESIS_HASH } from './audit-chain';
import { AuditChainVerifier, ChainVerification } from './audit-chain-verifier';
import { ActorType, AuditEntry } from './audit-entry.entity';
import { AuditActions } from './audit-actions';
import { AuditRepository } from './audit.repository';
import type { AuditExpansion, AuditNames } from './audit-expansions';
import { AuditSubject, AuditSubjects } from './audit-subjects';
import { AuditQueryDto } from './dto/audit.dto';

export interface AuditActor {
  type: ActorType;
  id: string | null;
  /** The OAuth client a user's action came through (an OAuth access token). */
  client_id?: string;
}

/** Where a request came from, for the audit trail. */
export interface RequestOrigin {
  ip: string | null;
  userAgent: string | null;
}

export interface AuditEvent {
  organizationId: string;
  keyId?: string | null;
  /** An action some module declared on AuditActions (each module types its own: RoleAuditAction, …). */
  action: string;
  actor: AuditActor;
  origin?: RequestOrigin;
  details?: Record<string, unknown>;
}

/** The SQL LIKE pattern (or exact value) for an action filter; group names hold no LIKE wildcards. */
export function actionPattern(filter: string): { exact: string } | { prefix: string } {
  return filter.endsWith('.*') ? { prefix: filter.slice(0, -1) } : { exact: filter };
}

export const SYSTEM_ACTOR: AuditActor = { type: 'system', id: null };

export function actorOf(principal: Principal): AuditActor {
  if (principal.kind === 'api_key') return { type: 'api_key', id: principal.apiKeyId };
  return principal.oauth
    ? { type: 'user', id: principal.userId, client_id: principal.oauth.clientId }
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

/**
 * An event as it is written: its id and time are fixed when it happens, so an entry written again
 * (a retry of a write whose outcome was unknown) is recognised by its id, and shows when it happened.
 */
export interface StampedEvent {
  id: string;
  at: Date;
  event: AuditEvent;
}

const FLUSH_DELAY_MS = 100;
/** Entries per transaction. */
const MAX_BATCH = 200;
/**
 * Entries from the request path waiting in memory while the database cannot take them. Refusals are
 * coalesced per key, reason and window, so only a long outage with many keys refused comes near it.
 */
export const MAX_WAITING_AUDIT_ENTRIES = 10_000;

/**
 * The audit trail. Management actions append inside their own transaction (`append`), so the change
 * and its record commit together. Events from the request path (`enqueue`, `recordDenial`) are
 * batched and written off the request, so a key check never waits on an insert; a batch the database
 * does not take waits (bounded, in order) and is retried, and shutdown writes what waits. Entries of
 * one organization form a chain keyed with AUDIT_CHAIN_SECRET (audit-chain.ts), appended under an
 * advisory lock so instances never fork it, its head kept beside it (AuditChainHead).
 */
@Injectable()
export class AuditService implements BeforeApplicationShutdown {
  private readonly logger = new Logger('Audit');
  /** Entries from the request path not yet written, oldest first. */
  private waiting: StampedEvent[] = [];
  /** How many entries at the head of `waiting` were in a write that failed: some may have committed. */
  private unconfirmed = 0;
  private readonly denials = new Map<string, DenialWindow>();
  /** Audit entries waiting for the database (exported to MetricsService). */
  readonly backlog = new WriteBacklog({
    what: 'audit entries',
    droppedWhat: 'audit entries',
    capacity: MAX_WAITING_AUDIT_ENTRIES,
    delayMs: FLUSH_DELAY_MS,
    logger: this.logger,
    waiting: () => this.waiting.length,
    write: () => this.writeWaiting(),
    discardOldest: () => {
      const discarded = this.waiting.splice(0, MAX_BATCH);
      this.unconfirmed = Math.max(0, this.unconfirmed - discarded.length);
      return discarded.length;
    },
  });

  constructor(
    private readonly entries: AuditRepository,
    private readonly subjects: AuditSubjects,
    private readonly key: AuditChainKey,
    private readonly verifier: AuditChainVerifier,
    private readonly actions: AuditActions,
    @Inject(auditConfig.KEY) private readonly config: ConfigOf<typeof auditConfig>,
    @Inject(lifecycleConfig.KEY) private readonly lifecycle: ConfigOf<typeof lifecycleConfig>,
    // In the worker process nothing serves /metrics: what waits there is retried and logged at shutdown.
    metrics: MetricsService,
  ) {
    metrics.exportBacklog(this.backlog, {
      waiting: [
        'gatehouse_audit_entries_waiting',
        'Audit entries held in memory until the database takes them.',
      ],
      dropped: [
        'gatehouse_audit_entries_dropped_total',
        'Audit entries dropped because MAX_WAITING_AUDIT_ENTRIES already waited (database unreachable).',
      ],
    });
  }

  /** Appends in the caller's transaction. */
  async append(manager: EntityManager, events: AuditEvent[]): Promise<void> {
    await this.appendStamped(
      manager,
      events.map((event) => this.stamp(event)),
      false,
    );
  }

  private stamp(event: AuditEvent): StampedEvent {
    this.assertDeclared(event);
    return { id: newId(AUDIT_ENTRY_ID), at: new Date(), event };
  }

  /**
   * An action nobody declared could never be asked for (`?action=` refuses it) nor named in the OpenAPI
   * document: recording one is a mistake of the module that records it, reported where it is made.
   */
  private assertDeclared(event: AuditEvent): void {
    if (!this.actions.isDeclared(event.action)) {
      throw new Error(
        `audit action "${event.action}" is not declared: declare it on AuditActions in onModuleInit`,
      );
    }
  }

  /**
   * Appends entries whose id and time are already fixed, in the caller's transaction and in order.
   * `mayBeWritten`: a write of some of them failed without saying whether it committed, so entries
   * already in the table are skipped instead of written twice (a transaction commits all or none, so
   * the chain stays whole either way).
   */
  async appendStamped(manager: EntityManager, entries: StampedEvent[], mayBeWritten: boolean): Promise<void> {
    const byOrganization = new Map<string, StampedEvent[]>();
    for (const entry of entries) {
      const organizationId = entry.event.organizationId;
      byOrganization.set(organizationId, [...(byOrganization.get(organizationId) ?? []), entry]);
    }
    // A fixed lock order keeps two multi-organization batches from deadlocking.
    for (const organizationId of [...byOrganization.keys()].sort()) {
      await this.entries.lockChain(manager, organizationId);
      let toWrite = byOrganization.get(organizationId)!;
      if (mayBeWritten) {
        const writtenIds = await this.entries.writtenIds(
          manager,
          toWrite.map((entry) => entry.id),
        );
        toWrite = toWrite.filter((entry) => !writtenIds.has(entry.id));
        if (!toWrite.length) continue;
      }
      const start = await this.chainStart(manager, organizationId);
      let previousHash = start.previousHash;
      const rows: (QueryDeepPartialEntity<AuditEntry> & { id: string; hash: string })[] = [];
      for (const { id, at, event } of toWrite) {
        const row = {
          id,
          organizationId,
          keyId: event.keyId ?? null,
          action: event.action,
          actorType: event.actor.type,
          actorId: event.actor.id,
          actorClientId: event.actor.client_id ?? null,
          ip: event.origin?.ip ?? null,
          userAgent: event.origin?.userAgent ?? null,
          details: event.details ?? {},
          createdAt: at,
        };
        const hash = this.key.link(previousHash, row);
        rows.push({
          ...row,
          details: row.details as QueryDeepPartialEntity<Record<string, unknown>>,
          previousHash,
          hash,
          keyed: true,
        });
        previousHash = hash;
      }
      const sequence = await this.entries.insert(manager, rows);
      const last = rows[rows.length - 1];
      const head = { organizationId, sequence, entryId: last.id, hash: last.hash };
      // A head found tampered with is not signed again: the check keeps reporting it.
      await this.entries.saveHead(manager, { ...head, mac: start.trusted ? this.key.headMac(head) : '' });
    }
  }

  /**
   * The link the next entry follows, and whether the head it comes from is one this key signed. New
   * entries follow the head, not the last row: after the last entries were deleted, the next entry still
   * names the last one that was written, so the gap shows at it instead of being closed over.
   */
  private async chainStart(
    manager: EntityManager,
    organizationId: string,
  ): Promise<{ previousHash: string; trusted: boolean }> {
    const head = await this.entries.head(manager, organizationId);
    if (head) {
      const trusted = this.key.headIsGenuine(head);
      if (!trusted && head.mac !== '') {
        this.logger.warn(`The audit chain head of ${organizationId} is not one this key signed`);
      }
      return { previousHash: head.hash, trusted };
    }
    // No head: entries written before the chain had a key (which the first keyed entry seals), or none.
    const last = await this.entries.lastEntry(manager, organizationId);
    if (last?.keyed) this.logger.warn(`The audit chain head of ${organizationId} is missing`);
    return { previousHash: last?.hash ?? GENESIS_HASH, trusted: !last?.keyed };
  }

  /**
   * Fire-and-forget from the request path; written within about 100 ms, or once the database is back
   * (at most MAX_WAITING_AUDIT_ENTRIES wait; past that new ones are dropped and counted).
   */
  enqueue(event: AuditEvent): void {
    this.assertDeclared(event);
    if (!this.backlog.admit(1)) return;
    this.waiting.push(this.stamp(event));
    this.backlog.schedule(this.waiting.length >= MAX_BATCH);
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

  /**
   * Writes everything enqueued so far; resolves when it is in the database, or kept to be retried if
   * the database refused it (never rejects: failing the request that caused an entry would be worse).
   */
  flush(): Promise<void> {
    return this.backlog.flush();
  }

  /** Writes `waiting` from the head, a transaction per batch; stops (keeping the rest) at a failure. */
  private async writeWaiting(): Promise<void> {
    while (this.waiting.length) {
      const batch = this.waiting.slice(0, MAX_BATCH);
      const mayBeWritten = this.unconfirmed > 0;
      try {
        await this.entries.transaction((manager) => this.appendStamped(manager, batch, mayBeWritten));
      } catch (error) {
        this.unconfirmed = Math.max(this.unconfirmed, batch.length);
        throw error;
      }
      // Entries enqueued meanwhile were pushed behind the batch.
      this.waiting.splice(0, batch.length);
      this.unconfirmed = Math.max(0, this.unconfirmed - batch.length);
      this.backlog.progressed();
    }
  }

  /** Closes due denial windows (all of them at shutdown) and enqueues their coalesced rest; returns how many closed. */
  closeDenialWindows(all: boolean): number {
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
    return closed;
  }

  /** `query.action` is checked here, against this app's declared actions (AuditActions). */
  async list(organizationId: string, query: AuditQueryDto, keyId?: string): Promise<Page<AuditEntry>> {
    this.actions.assertFilter(query.action);
    return this.entries.page(
      organizationId,
      {
        keyId: keyId ?? query.key_id,
        action: query.action === undefined ? undefined : actionPattern(query.action),
        actorType: query.actor_type,
        actorId: query.actor_id,
      },
      query,
    );
  }

  /**
   * The names of the users and keys a page of entries mentions, for what `expand` asks: one lookup per
   * kind for the whole page (not one per entry), each scoped to the organization.
   */
  async namesOf(
    organizationId: string,
    entries: AuditEntry[],
    expand: readonly AuditExpansion[] = [],
  ): Promise<AuditNames> {
    const idsOf = (type: ActorType) =>
      entries.flatMap((entry) => (entry.actorType === type && entry.actorId ? [entry.actorId] : []));
    const wantsActors = expand.includes('actor');
    const wantsKeys = expand.includes('key');
    const keyIds = [
      ...(wantsActors ? idsOf('api_key') : []),
      ...(wantsKeys ? entries.flatMap((entry) => (entry.keyId ? [entry.keyId] : [])) : []),
    ];
    const [users, keys] = await Promise.all([
      wantsActors
        ? this.subjects.lookUp(organizationId, 'user', idsOf('user'))
        : new Map<string, AuditSubject>(),
      this.subjects.lookUp(organizationId, 'api_key', keyIds),
    ]);
    return {
      ...(wantsActors ? { actors: { users, keys } } : {}),
      ...(wantsKeys ? { keys } : {}),
    };
  }

  /**
   * Verifies the organization's chain, a page at a time (AuditChainVerifier), and against a checkpoint
   * exported earlier when one is given.
   */
  verifyChain(organizationId: string, checkpoint?: string): Promise<ChainVerification> {
    return this.verifier.verify(organizationId, checkpoint);
  }

  /**
   * Shutdown runs in three phases: workers finish or hand back their work (onModuleDestroy), buffers
   * are written (here), connections close (onApplicationShutdown, where TypeORM destroys its pool).
   * Flushing any later loses the entries: "Driver not Connected". A database that is down gets a
   * fifth of SHUTDOWN_GRACE_MS (usage has another fifth); what is still not written is logged as a count.
   */
  async beforeApplicationShutdown(): Promise<void> {
    this.closeDenialWindows(true);
    await this.backlog.close(this.lifecycle.shutdownGraceMs / 5);
  }
}
