import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { createHash } from 'node:crypto';
import { EntityManager, Repository } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { InvalidationBus } from '../cache-invalidation/invalidation-bus';
import { Clock } from '../common/clock';
import { OAuthGrant } from './oauth-grant.entity';
import { OAuthRecord } from './oauth-record.entity';

/** SHA-256 hex: how every oidc-provider id is kept (a token's value is its id). */
export const hashOf = (value: string): string => createHash('sha256').update(value, 'utf8').digest('hex');

/** Models whose rows name their grant (revokeByGrantId). */
type Payload = Record<string, unknown>;

/**
 * The oauth_records and oauth_grants tables: every query on them. Ids arrive in clear from
 * oidc-provider and leave here hashed; a payload is stored without its `jti` and given it back on read.
 */
@Injectable()
export class OAuthRecordsRepository {
  constructor(
    @InjectRepository(OAuthRecord) private readonly records: Repository<OAuthRecord>,
    @InjectRepository(OAuthGrant) private readonly grants: Repository<OAuthGrant>,
    private readonly clock: Clock,
    private readonly invalidations: InvalidationBus,
  ) {}

  /**
   * Every instance drops what it cached of the grant's tokens (the access layer's OAuthTokenResolver),
   * after the change committed: a grant ended here is refused everywhere at the next request.
   */
  private grantEnded(grant: OAuthGrant | null): void {
    if (grant) this.invalidations.publish({ kind: 'oauth_grant', grantId: grant.id });
  }

  private key(model: string, id: string): string {
    return `${model}:${hashOf(id)}`;
  }

  async upsert(model: string, id: string, payload: Payload, expiresIn: number | undefined): Promise<void> {
    const stored: Payload = { ...payload };
    delete stored.jti;
    const grantId = typeof payload.grantId === 'string' ? payload.grantId : null;
    // A Grant row is keyed by its own id: revokeByGrantId on the Grant model is its destroy.
    const uid = typeof payload.uid === 'string' ? payload.uid : null;
    const userCode = typeof payload.userCode === 'string' ? payload.userCode : null;
    const row: OAuthRecord = {
      idHash: this.key(model, id),
      model,
      payload: stored,
      grantIdHash: grantId ? hashOf(grantId) : null,
      uidHash: uid ? hashOf(uid) : null,
      userCodeHash: userCode ? hashOf(userCode) : null,
      expiresAt: expiresIn ? new Date(this.clock.now() + expiresIn * 1000) : null,
      consumedAt: null,
    };
    // TypeORM's partial-entity type does not take an open jsonb record; the row is a whole entity.
    await this.records.upsert(row as QueryDeepPartialEntity<OAuthRecord>, ['idHash']);
  }

  private live(row: OAuthRecord | null, id: string): Payload | undefined {
    if (!row) return undefined;
    if (row.expiresAt && row.expiresAt.getTime() <= this.clock.now()) return undefined;
    const payload: Payload = { ...row.payload, jti: id };
    if (row.consumedAt) payload.consumed = Math.floor(row.consumedAt.getTime() / 1000);
    return payload;
  }

  async find(model: string, id: string): Promise<Payload | undefined> {
    return this.live(await this.records.findOneBy({ idHash: this.key(model, id) }), id);
  }

  /** A session by its uid: the payload carries its own jti back (kept hashed, so it is not known here). */
  async findByUid(model: string, uid: string): Promise<Payload | undefined> {
    const row = await this.records.findOneBy({ model, uidHash: hashOf(uid) });
    if (!row || (row.expiresAt && row.expiresAt.getTime() <= this.clock.now())) return undefined;
    return { ...row.payload };
  }

  async findByUserCode(model: string, userCode: string): Promise<Payload | undefined> {
    const row = await this.records.findOneBy({ model, userCodeHash: hashOf(userCode) });
    if (!row || (row.expiresAt && row.expiresAt.getTime() <= this.clock.now())) return undefined;
    return { ...row.payload };
  }

  async consume(model: string, id: string): Promise<void> {
    await this.records.update({ idHash: this.key(model, id) }, { consumedAt: this.clock.date() });
  }

  async destroy(model: string, id: string): Promise<void> {
    await this.records.delete({ idHash: this.key(model, id) });
    // A provider grant that ends takes the listed grant with it.
    if (model === 'Grant') {
      const grant = await this.findGrantByProviderId(id);
      await this.grants.delete({ providerGrantHash: hashOf(id) });
      this.grantEnded(grant);
    }
  }

  /** What oidc-provider ends when a code or refresh token is replayed: every token of the grant. */
  async revokeByGrantId(model: string, grantId: string): Promise<void> {
    await this.records.delete({ model, grantIdHash: hashOf(grantId) });
    this.grantEnded(await this.findGrantByProviderId(grantId));
  }

  /** Expired records, then the grants whose provider grant they took; returns how many records went. */
  async deleteExpired(): Promise<number> {
    const deleted = await this.records
      .createQueryBuilder()
      .delete()
      .where('expires_at <= :now', { now: this.clock.date() })
      .execute();
    await this.records.manager.query(
      `DELETE FROM oauth_grants g WHERE NOT EXISTS (SELECT 1 FROM oauth_records r WHERE r.id_hash = 'Grant:' || g.provider_grant_hash)`,
    );
    return deleted.affected ?? 0;
  }

  // --- Grants (oauth_grants) ---

  /**
   * Saves a grant and, in the same transaction, what `alongside` writes (its audit entries and events);
   * answers whether the organization had no grant of this client before (its first authorization).
   */
  async saveGrant(
    grant: OAuthGrant,
    alongside: (manager: EntityManager, firstOfClient: boolean) => Promise<void> = async () => undefined,
  ): Promise<void> {
    await this.grants.manager.transaction(async (manager) => {
      const firstOfClient = !(await manager.exists(OAuthGrant, {
        where: { organizationId: grant.organizationId, clientId: grant.clientId },
      }));
      await manager.upsert(OAuthGrant, grant, ['providerGrantHash']);
      await alongside(manager, firstOfClient);
    });
  }

  findGrantByProviderId(providerGrantId: string): Promise<OAuthGrant | null> {
    return this.grants.findOneBy({ providerGrantHash: hashOf(providerGrantId) });
  }

  findGrant(organizationId: string, id: string): Promise<OAuthGrant | null> {
    return this.grants.findOneBy({ organizationId, id });
  }

  listGrants(organizationId: string, userId?: string): Promise<OAuthGrant[]> {
    return this.grants.find({
      where: userId ? { organizationId, userId } : { organizationId },
      order: { createdAt: 'DESC', id: 'DESC' },
    });
  }

  async touchGrant(id: string, at: Date): Promise<void> {
    await this.grants.update({ id }, { lastUsedAt: at });
  }

  /** Ends a grant: its row, oidc-provider's Grant and every code and token issued under it. */
  async endGrant(
    grant: OAuthGrant,
    alongside: (manager: EntityManager) => Promise<void> = async () => undefined,
  ): Promise<void> {
    await this.records.manager.transaction(async (manager) => {
      await alongside(manager);
      await manager.delete(OAuthRecord, { grantIdHash: grant.providerGrantHash });
      await manager.delete(OAuthRecord, { idHash: `Grant:${grant.providerGrantHash}` });
      await manager.delete(OAuthGrant, { id: grant.id });
    });
    this.grantEnded(grant);
  }
}
