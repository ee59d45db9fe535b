import { Injectable } from '@nestjs/common';

/** What changed, at the granularity caches are keyed by. */
export type Invalidation =
  | { kind: 'key'; keyId: string }
  | { kind: 'user'; userId: string }
  | { kind: 'organization'; organizationId: string }
  /** Sent locally when a transport reconnects: messages may have been missed, so forget everything. */
  | { kind: 'all' };

export type InvalidationListener = (invalidation: Invalidation) => void;

/**
 * The one path by which a change to a key, a role or a user reaches every cache that holds it.
 * Publish after the change has committed. Delivery is in-process here; a transport (Redis pub/sub or
 * PostgreSQL NOTIFY) plugs in through `attachTransport` to reach other instances.
 */
@Injectable()
export class InvalidationBus {
  private readonly listeners: InvalidationListener[] = [];
  private transport?: (invalidation: Invalidation) => void;

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

  attachTransport(send: (invalidation: Invalidation) => void): void {
    this.transport = send;
  }
}
