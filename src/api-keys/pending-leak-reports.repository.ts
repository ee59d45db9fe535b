import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import type { EntityManager, Repository } from 'typeorm';
import type { RequestOrigin } from '../audit/audit.service';
import type { LeakSource } from './api-key-leak.entity';
import { PendingLeakReport } from './pending-leak-report.entity';

/** The pending_leak_reports table: reports taken, waiting for their leak_responses. */
@Injectable()
export class PendingLeakReportsRepository {
  constructor(@InjectRepository(PendingLeakReport) private readonly rows: Repository<PendingLeakReport>) {}

  /** Stores a report in one INSERT whatever its hashes name: nothing here looks at api_keys. */
  async add(source: LeakSource, valueHashes: string[], origin: RequestOrigin | undefined): Promise<void> {
    await this.rows.insert({
      id: randomUUID(),
      source,
      valueHashes,
      ip: origin?.ip ?? null,
      userAgent: origin?.userAgent ?? null,
      receivedAt: new Date(),
    });
  }

  /**
   * The oldest report no other transaction holds, locked in the caller's transaction until it is
   * deleted there (SKIP LOCKED: instances applying reports at once each take a different one).
   */
  claimOldest(manager: EntityManager): Promise<PendingLeakReport | null> {
    return manager
      .createQueryBuilder(PendingLeakReport, 'report')
      .orderBy('report.received_at', 'ASC')
      .addOrderBy('report.id', 'ASC')
      .limit(1)
      .setLock('pessimistic_write')
      .setOnLocked('skip_locked')
      .getOne();
  }

  async delete(manager: EntityManager, id: string): Promise<void> {
    await manager.delete(PendingLeakReport, { id });
  }
}
