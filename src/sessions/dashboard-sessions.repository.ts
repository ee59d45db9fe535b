import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { IsNull, Repository } from 'typeorm';
import { DashboardSession } from './dashboard-session.entity';

/** The dashboard_sessions table: every query on it. */
@Injectable()
export class DashboardSessionsRepository {
  constructor(@InjectRepository(DashboardSession) private readonly rows: Repository<DashboardSession>) {}

  async insert(session: DashboardSession): Promise<void> {
    await this.rows.insert(session);
  }

  findById(id: string): Promise<DashboardSession | null> {
    return this.rows.findOneBy({ id });
  }

  findByRefreshHash(refreshHash: string): Promise<DashboardSession | null> {
    return this.rows.findOneBy({ refreshHash });
  }

  async markUsed(id: string, at: Date): Promise<void> {
    await this.rows.update({ id }, { lastUsedAt: at });
  }

  /** Ends a session; a second revocation keeps the first time. */
  async revoke(where: { id: string } | { refreshHash: string }, at: Date): Promise<void> {
    await this.rows.update({ ...where, revokedAt: IsNull() }, { revokedAt: at });
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
