import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, In, Repository } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { DomainEvent } from './event.entity';

/** The events table (the outbox): every query on it. Writes run in the caller's transaction. */
@Injectable()
export class EventsRepository {
  constructor(@InjectRepository(DomainEvent) private readonly events: Repository<DomainEvent>) {}

  async insert(manager: EntityManager, rows: QueryDeepPartialEntity<DomainEvent>[]): Promise<void> {
    await manager.insert(DomainEvent, rows);
  }

  /** Inserts one event and returns it as saved. */
  insertOne(manager: EntityManager, fields: Partial<DomainEvent>): Promise<DomainEvent> {
    return manager.save(manager.create(DomainEvent, fields));
  }

  /** Undispatched events, oldest first, locked for the caller's transaction (other dispatchers skip them). */
  claimUndispatched(manager: EntityManager, limit: number): Promise<DomainEvent[]> {
    return manager
      .createQueryBuilder(DomainEvent, 'event')
      .where('event.dispatched_at IS NULL')
      .orderBy('event.created_at', 'ASC')
      .limit(limit)
      .setLock('pessimistic_write')
      .setOnLocked('skip_locked')
      .getMany();
  }

  async markDispatched(manager: EntityManager, ids: string[]): Promise<void> {
    await manager.update(DomainEvent, { id: In(ids) }, { dispatchedAt: new Date() });
  }

  findById(id: string): Promise<DomainEvent | null> {
    return this.events.findOneBy({ id });
  }
}
