import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, In, Repository } from 'typeorm';
import { ListQueryDto, Page, paginate } from '../common/pagination';
import { WebhookDelivery } from './webhook-delivery.entity';
import { Webhook } from './webhook.entity';

/** The fields a delivery attempt settles. */
export type DeliverySettlement = Pick<
  WebhookDelivery,
  'status' | 'lastResponseStatus' | 'lastError' | 'deliveredAt' | 'nextAttemptAt'
>;

/**
 * The webhooks and webhook_deliveries tables: endpoints, and deliveries as a queue. Deliveries are
 * claimed by pushing their next attempt past the call's timeout (FOR UPDATE SKIP LOCKED), so a worker
 * that dies mid-call leaves them due again: at least once, never twice at the same time.
 *
 * One lock order everywhere, so two instances never deadlock: a transaction that changes an endpoint and
 * its deliveries locks the endpoint row first (lockWebhook), then deliveries in id order. Claiming waits
 * for no lock at all (SKIP LOCKED) and holds no endpoint. Recording a failure used to lock its delivery,
 * then the endpoint (the failure count), while disabling held the endpoint and waited for the pending
 * deliveries: deadlock (PostgreSQL 40P01) when two loops recorded failures of one endpoint.
 */
@Injectable()
export class WebhooksRepository {
  constructor(
    @InjectRepository(Webhook) private readonly webhooks: Repository<Webhook>,
    @InjectRepository(WebhookDelivery) private readonly deliveries: Repository<WebhookDelivery>,
  ) {}

  transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.webhooks.manager.transaction(work);
  }

  // Endpoints

  newWebhook(manager: EntityManager, fields: Partial<Webhook>): Webhook {
    return manager.create(Webhook, fields);
  }

  saveWebhook(manager: EntityManager, webhook: Webhook): Promise<Webhook> {
    return manager.save(webhook);
  }

  findWebhook(id: string): Promise<Webhook | null> {
    return this.webhooks.findOneBy({ id });
  }

  findWebhookInOrganization(organizationId: string, id: string): Promise<Webhook | null> {
    return this.webhooks.findOneBy({ id, organizationId });
  }

  pageWebhooks(organizationId: string, query: ListQueryDto): Promise<Page<Webhook>> {
    return paginate(
      this.webhooks
        .createQueryBuilder('webhook')
        .where('webhook.organization_id = :organizationId', { organizationId }),
      query,
    );
  }

  /**
   * The endpoint, locked until the transaction ends (FOR UPDATE): the first lock of every transaction
   * that changes an endpoint and its deliveries. Read fresh, so a disable by another instance is seen.
   */
  lockWebhook(manager: EntityManager, id: string): Promise<Webhook | null> {
    return manager.findOne(Webhook, { where: { id }, lock: { mode: 'pessimistic_write' } });
  }

  /** An endpoint and its deliveries (the endpoint locked first, as everywhere). */
  async deleteWebhook(manager: EntityManager, id: string): Promise<void> {
    await this.lockWebhook(manager, id);
    await manager.query(
      `DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries
                                                    WHERE webhook_id = $1 ORDER BY id FOR UPDATE)`,
      [id],
    );
    await manager.delete(Webhook, { id });
  }

  enabledWebhooksOf(manager: EntityManager, organizationIds: string[]): Promise<Webhook[]> {
    return manager.find(Webhook, { where: { organizationId: In(organizationIds), enabled: true } });
  }

  async resetFailures(manager: EntityManager, webhookId: string): Promise<void> {
    await manager.update(Webhook, { id: webhookId }, { consecutiveFailures: 0 });
  }

  /** Counts one more failure in a row; answers the new count (undefined when the endpoint is gone). */
  async countFailure(manager: EntityManager, webhookId: string): Promise<number | undefined> {
    const [rows] = await manager.query<[{ consecutive_failures: number }[], number]>(
      `UPDATE webhooks SET consecutive_failures = consecutive_failures + 1 WHERE id = $1 RETURNING consecutive_failures`,
      [webhookId],
    );
    return rows[0]?.consecutive_failures;
  }

  /**
   * Disables an endpoint and fails what is still pending for it. The caller holds the endpoint's lock
   * (lockWebhook), so no other recording for this endpoint runs meanwhile; the deliveries are locked in id
   * order, waiting at most for a claim's one statement (a claim holds no endpoint and waits for nothing).
   * A delivery in flight elsewhere is recorded after this commits, and sees the endpoint disabled.
   */
  async disable(manager: EntityManager, webhookId: string, reason: string): Promise<void> {
    await manager.update(
      Webhook,
      { id: webhookId },
      { enabled: false, disabledAt: new Date(), disabledReason: reason },
    );
    await manager.query(
      `UPDATE webhook_deliveries SET status = 'failed', last_error = 'endpoint_disabled', next_attempt_at = NULL
        WHERE id IN (SELECT id FROM webhook_deliveries
                      WHERE webhook_id = $1 AND status = 'pending'
                      ORDER BY id FOR UPDATE)`,
      [webhookId],
    );
  }

  // Deliveries

  newDelivery(manager: EntityManager, fields: Partial<WebhookDelivery>): WebhookDelivery {
    return manager.create(WebhookDelivery, fields);
  }

  saveDelivery(
    delivery: WebhookDelivery,
    manager: EntityManager = this.deliveries.manager,
  ): Promise<WebhookDelivery> {
    return manager.save(delivery);
  }

  /** One delivery per (event, endpoint): a fan-out repeated after a crash adds nothing. */
  async insertDeliveries(manager: EntityManager, rows: Partial<WebhookDelivery>[]): Promise<void> {
    if (rows.length)
      await manager.createQueryBuilder().insert().into(WebhookDelivery).values(rows).orIgnore().execute();
  }

  findDelivery(webhookId: string, id: string): Promise<WebhookDelivery | null> {
    return this.deliveries.findOneBy({ id, webhookId });
  }

  pageDeliveries(webhookId: string, query: ListQueryDto): Promise<Page<WebhookDelivery>> {
    return paginate(
      this.deliveries.createQueryBuilder('delivery').where('delivery.webhook_id = :webhookId', { webhookId }),
      query,
    );
  }

  /** Due deliveries, claimed (attempt counted) until `visibilityMs` from now. */
  async claimDue(visibilityMs: number, batch: number): Promise<WebhookDelivery[]> {
    const [claimed] = await this.deliveries.query<[{ id: string }[], number]>(
      `UPDATE webhook_deliveries SET attempts = attempts + 1, updated_at = now(),
              next_attempt_at = now() + make_interval(secs => $1::double precision / 1000)
        WHERE id IN (SELECT id FROM webhook_deliveries
                      WHERE status = 'pending' AND next_attempt_at <= now()
                      ORDER BY next_attempt_at, id LIMIT $2
                      FOR UPDATE SKIP LOCKED)
        RETURNING id`,
      [visibilityMs, batch],
    );
    if (!claimed.length) return [];
    return this.deliveries.findBy({ id: In(claimed.map((c) => c.id)) });
  }

  async settle(manager: EntityManager, deliveryId: string, settlement: DeliverySettlement): Promise<void> {
    await manager.update(WebhookDelivery, { id: deliveryId }, settlement);
  }
}
