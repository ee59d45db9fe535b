import { Injectable } from '@nestjs/common';

/** What changed, at the granularity caches are keyed by. */
export type Invalidation =
  | { kind: 'key'; keyId: string }
  | { kind: 'user'; userId: string }
  /** An identity changed or went: the records of the keys that name it show it. */
  | { kind: 'identity'; identityId: string }
  | { kind: 'organization'; organizationId: string }
  /** An organization's agents changed (one created, renamed or deleted): what lists them shows it (MCP's tools). */
  | { kind: 'agents'; organizationId: string }
  /** An OAuth grant ended (revoked, or a replayed code or refresh token ended it): its tokens stop. */
  | { kind: 'oauth_grant'; grantId: string }
  /** Sent locally when a transport hears again after a gap: messages may have been missed, so forget everything. */
  | { kind: 'all' };

export type InvalidationListener = (invalidation: Invalidation) => void;

/**
 * The one path by which a change to a key, a role or a user reaches every cache that holds it.
 * Publish after the change has committed. Delivery is in-process here; a transport (Redis pub/sub or
 * PostgreSQL NOTIFY) plugs in through `attachTransport` to reach other instances, and reports whether
 * it can hear them: while it cannot, `hearsEveryInstance` is false and caches must not trust what
 * they hold (another instance may have revoked it meanwhile).
 */
@Injectable()
export class InvalidationBus {
  private readonly listeners: InvalidationListener[] = [];
  private transport?: (invalidation: Invalidation) => void;
  // Without a transport there is one instance (embedded database): it hears every change itself.
  private hearing = true;

  get hearsEveryInstance(): boolean {
    return this.hearing;
  }

  /**
   * Called by the transport when it starts or stops hearing other instances. Hearing again after a
   * gap clears every cache, since what was sent meanwhile is lost.
   */
  reportHearing(hearing: boolean): void {
    const recovered = hearing && !this.hearing;
    this.hearing = hearing;
    if (recovered) this.deliverLocally({ kind: 'all' });
  }

  subscribe(listener: InvalidationListener): void {
    this.listeners.push(listener);
  }

  publish(invalidation: Invalidation): void {
    this.deliverLocally(invalidation);
    this.transport?.(invalidation);
  }

  /** Called by a transport when another instance published. */
  deliverLocally(invalidation: Invalidation): void {
    for (const listener of this.listeners) listener(invalidation);
  }

  /** Until the transport reports hearing, caches are distrusted. */
  attachTransport(send: (invalidation: Invalidation) => void): void {
    this.transport = send;
    this.hearing = false;
  }
}
