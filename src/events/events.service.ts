import { Inject, Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { newId } from '../common/ids';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { DomainEvent } from './event.entity';
import { SecretBox } from './secret-box';

export interface NewEvent {
  organizationId: string;
  type: string;
  data: Record<string, unknown>;
  /** Only for events that must hand a secret to their receivers (policy rotations). */
  secret?: string;
}

/** Writes events to the outbox inside the caller's transaction. */
@Injectable()
export class EventsService {
  private readonly box: SecretBox;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.box = new SecretBox(config.API_KEY_HASH_SECRET, 'event-secrets');
  }

  async record(manager: EntityManager, events: NewEvent[]): Promise<void> {
    if (!events.length) return;
    await manager.insert(
      DomainEvent,
      events.map((event) => ({
        id: newId('event'),
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
}
