import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { newId } from '../common/ids';
import { EVENT_ID } from './events.declarations';
import { DomainEvent } from './event.entity';
import { EventsRepository } from './events.repository';
import { SecretBox } from '../secrets/secret-box';
import { Secrets } from '../secrets/secrets';

export interface NewEvent {
  organizationId: string;
  type: string;
  data: Record<string, unknown>;
  /** Only for events that must hand a secret to their receivers (policy rotations). */
  secret?: string;
}

/** The outbox: writes events inside the caller's transaction; dispatchers claim them from here. */
@Injectable()
export class EventsService {
  private readonly box: SecretBox;

  constructor(
    secrets: Secrets,
    private readonly events: EventsRepository,
  ) {
    this.box = secrets.sealer('event-secrets');
  }

  async record(manager: EntityManager, events: NewEvent[]): Promise<void> {
    if (!events.length) return;
    await this.events.insert(
      manager,
      events.map((event) => ({
        id: newId(EVENT_ID),
        organizationId: event.organizationId,
        type: event.type,
        data: event.data,
        sealedSecret: event.secret ? this.box.seal(event.secret) : null,
      })) as QueryDeepPartialEntity<DomainEvent>[],
    );
  }

  /** For the delivery side: the secret an event carries, decrypted. */
  openSecret(event: DomainEvent): string | undefined {
    return event.sealedSecret ? this.box.open(event.sealedSecret) : undefined;
  }

  /** Undispatched events, oldest first, locked for the caller's transaction (other dispatchers skip them). */
  claimUndispatched(manager: EntityManager, limit: number): Promise<DomainEvent[]> {
    return this.events.claimUndispatched(manager, limit);
  }

  async markDispatched(manager: EntityManager, ids: string[]): Promise<void> {
    if (ids.length) await this.events.markDispatched(manager, ids);
  }

  /** An event addressed to one receiver only (a ping): recorded as already dispatched. */
  recordDirect(manager: EntityManager, event: Omit<NewEvent, 'secret'>): Promise<DomainEvent> {
    return this.events.insertOne(manager, {
      id: newId(EVENT_ID),
      organizationId: event.organizationId,
      type: event.type,
      data: event.data,
      sealedSecret: null,
      dispatchedAt: new Date(),
    });
  }

  find(id: string): Promise<DomainEvent | null> {
    return this.events.findById(id);
  }
}
