import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { AuditActor, AuditService, RequestOrigin } from '../audit/audit.service';
import type { KeyEventData, KeyEventDetails } from '../events/event-payloads.dto';
import { EventsService } from '../events/events.service';

interface KeyChangeOf<Action extends keyof KeyEventDetails> {
  key: { id: string; organizationId: string; name: string; type: KeyEventData['type']; role: string };
  /** `key.created`, `key.rotated`, … : the audit action and the event type are the same name. */
  action: Action;
  actor: AuditActor;
  origin?: RequestOrigin;
  /** What the event adds for this action (src/events/event-payloads.dto.ts), also the audit details. */
  details: KeyEventDetails[Action];
  /** A new key value that the event must carry (policy rotations only); sealed, never logged. */
  secret?: string;
}

export type KeyChange = { [Action in keyof KeyEventDetails]: KeyChangeOf<Action> }[keyof KeyEventDetails];

/**
 * Every key change leaves two records in the caller's transaction: an audit entry and an outbox
 * event. One place, so the two can never disagree.
 */
@Injectable()
export class KeyChangeRecorder {
  constructor(
    private readonly audit: AuditService,
    private readonly events: EventsService,
  ) {}

  async record(manager: EntityManager, changes: KeyChange[]): Promise<void> {
    if (!changes.length) return;
    await this.audit.append(
      manager,
      changes.map((change) => ({
        organizationId: change.key.organizationId,
        keyId: change.key.id,
        action: change.action,
        actor: change.actor,
        origin: change.origin,
        details: change.details,
      })),
    );
    await this.events.record(
      manager,
      changes.map((change) => ({
        organizationId: change.key.organizationId,
        type: change.action,
        data: {
          key_id: change.key.id,
          name: change.key.name,
          type: change.key.type,
          role: change.key.role,
          actor: change.actor,
          ...change.details,
        } satisfies KeyEventData,
        secret: change.secret,
      })),
    );
  }
}
