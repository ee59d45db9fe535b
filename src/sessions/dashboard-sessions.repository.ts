import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, IsNull, Repository } from 'typeorm';
import { DashboardSession } from './dashboard-session.entity';
import { RetiredRefreshToken } from './retired-refresh-token.entity';

/** The dashboard_sessions table and the refresh tokens its sessions replaced: every query on them. */
@Injectable()
export class DashboardSessionsRepository {
  constructor(
    @InjectRepository(DashboardSession) private readonly rows: Repository<DashboardSession>,
    @InjectRepository(RetiredRefreshToken) private readonly retired: Repository<RetiredRefreshToken>,
  ) {}

  /** Runs `work` in one transaction: a sign-in or sign-out and its audit entry commit together. */
  transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.rows.manager.transaction(work);
  }

  async insert(session: DashboardSession, manager: EntityManager = this.rows.manager): Promise<void> {
    await manager.insert(DashboardSession, session);
  }

  findById(id: string): Promise<DashboardSession | null> {
    return this.rows.findOneBy({ id });
  }

  findByRefreshHash(refreshHash: string): Promise<DashboardSession | null> {
    return this.rows.findOneBy({ refreshHash });
  }

  /** The session whose refresh token `refreshHash` was, before a refresh replaced it, and when that was. */
  async findRetired(refreshHash: string): Promise<{ session: DashboardSession; retiredAt: Date } | null> {
    const row = await this.retired.findOne({ where: { refreshHash }, relations: { session: true } });
    return row?.session ? { session: row.session, retiredAt: row.retiredAt } : null;
  }

  /**
   * Replaces a live session's refresh token `from` by `to` and keeps `from` as retired, in one transaction.
   * False when `from` is no longer the session's token (another refresh replaced it first: the row lock
   * makes the second wait for the first and then match nothing) or the session was revoked meanwhile.
   */
  async rotate(id: string, from: string, to: string, at: Date): Promise<boolean> {
    return this.rows.manager.transaction(async (manager) => {
      const { affected } = await manager.update(
        DashboardSession,
        { id, refreshHash: from, revokedAt: IsNull() },
        { refreshHash: to, lastUsedAt: at },
      );
      if (affected !== 1) return false;
      await manager.insert(RetiredRefreshToken, { refreshHash: from, sessionId: id, retiredAt: at });
      return true;
    });
  }

  async markUsed(id: string, at: Date): Promise<void> {
    await this.rows.update({ id }, { lastUsedAt: at });
  }

  /** Ends a session; a second revocation keeps the first time. Whether this call ended it. */
  async revoke(id: string, at: Date, manager: EntityManager = this.rows.manager): Promise<boolean> {
    const { affected } = await manager.update(
      DashboardSession,
      { id, revokedAt: IsNull() },
      { revokedAt: at },
    );
    return Boolean(affected);
  }

  /** Sessions of the user that can never authenticate again: signed out, or past their cap. */
  async deleteEndedOf(userId: string, now: Date): Promise<void> {
    await this.rows
      .createQueryBuilder()
      .delete()
      .where('user_id = :userId AND (revoked_at IS NOT NULL OR expires_at <= :now)', { userId, now })
      .execute();
  }
}
