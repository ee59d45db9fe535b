import { Inject, Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { DataSource, EntityManager, Repository } from 'typeorm';
import { actorOf, AuditService, RequestOrigin } from '../audit/audit.service';
import type { Principal } from '../auth/principal';
import { isIdOf, newId } from '../common/ids';
import { ListQueryDto, Page, paginate } from '../common/pagination';
import { conflict, notFound } from '../common/problem';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { DomainEvent } from '../events/event.entity';
import { SecretBox } from '../events/secret-box';
import { SafeHttpClient } from '../outbound/safe-http-client';
import { CreateWebhookDto, UpdateWebhookDto } from './dto/webhook.dto';
import { WebhookDelivery } from './webhook-delivery.entity';
import { newWebhookSecret } from './webhook-signature';
import { Webhook } from './webhook.entity';

/** Webhook endpoints of an organization, their secrets and their deliveries. */
@Injectable()
export class WebhooksService {
  readonly secrets: SecretBox;

  constructor(
    @InjectRepository(Webhook) private readonly webhooks: Repository<Webhook>,
    @InjectRepository(WebhookDelivery) private readonly deliveries: Repository<WebhookDelivery>,
    private readonly dataSource: DataSource,
    private readonly http: SafeHttpClient,
    private readonly audit: AuditService,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.secrets = new SecretBox(config.API_KEY_HASH_SECRET, 'webhook-secrets');
  }

  async create(
    principal: Principal,
    dto: CreateWebhookDto,
    origin: RequestOrigin,
  ): Promise<{ webhook: Webhook; secret: string }> {
    await this.http.assertAllowedTarget(dto.url);
    const secret = newWebhookSecret();
    const webhook = await this.dataSource.transaction(async (manager) => {
      const row = await manager.save(
        manager.create(Webhook, {
          id: newId('webhook'),
          organizationId: principal.organizationId,
          url: dto.url,
          events: [...new Set(dto.events)].sort(),
          description: dto.description ?? null,
          enabled: dto.enabled ?? true,
          sealedSecret: this.secrets.seal(secret),
          consecutiveFailures: 0,
          disabledAt: null,
          disabledReason: null,
        }),
      );
      await this.recordChange(manager, row, 'webhook.created', principal, origin, { url: row.url });
      return row;
    });
    return { webhook, secret };
  }

  list(principal: Principal, query: ListQueryDto): Promise<Page<Webhook>> {
    return paginate(
      this.webhooks
        .createQueryBuilder('webhook')
        .where('webhook.organization_id = :organizationId', { organizationId: principal.organizationId }),
      query,
    );
  }

  async get(principal: Principal, id: string): Promise<Webhook> {
    const webhook = isIdOf('webhook', id)
      ? await this.webhooks.findOneBy({ id, organizationId: principal.organizationId })
      : null;
    if (!webhook) throw notFound('The webhook');
    return webhook;
  }

  async update(
    principal: Principal,
    id: string,
    dto: UpdateWebhookDto,
    origin: RequestOrigin,
  ): Promise<Webhook> {
    const webhook = await this.get(principal, id);
    if (dto.url !== undefined) {
      await this.http.assertAllowedTarget(dto.url);
      webhook.url = dto.url;
    }
    if (dto.events !== undefined) webhook.events = [...new Set(dto.events)].sort();
    if (dto.description !== undefined) webhook.description = dto.description;
    if (dto.enabled !== undefined) {
      if (dto.enabled && !webhook.enabled) {
        webhook.consecutiveFailures = 0;
        webhook.disabledAt = null;
        webhook.disabledReason = null;
      }
      webhook.enabled = dto.enabled;
    }
    return this.dataSource.transaction(async (manager) => {
      const saved = await manager.save(webhook);
      await this.recordChange(manager, saved, 'webhook.updated', principal, origin, {
        fields: Object.keys(dto).sort(),
      });
      return saved;
    });
  }

  async rotateSecret(
    principal: Principal,
    id: string,
    origin: RequestOrigin,
  ): Promise<{ webhook: Webhook; secret: string }> {
    const webhook = await this.get(principal, id);
    const secret = newWebhookSecret();
    webhook.sealedSecret = this.secrets.seal(secret);
    const saved = await this.dataSource.transaction(async (manager) => {
      const row = await manager.save(webhook);
      await this.recordChange(manager, row, 'webhook.secret_rotated', principal, origin);
      return row;
    });
    return { webhook: saved, secret };
  }

  async delete(principal: Principal, id: string, origin: RequestOrigin): Promise<void> {
    const webhook = await this.get(principal, id);
    await this.dataSource.transaction(async (manager) => {
      await manager.delete(WebhookDelivery, { webhookId: webhook.id });
      await manager.delete(Webhook, { id: webhook.id });
      await this.recordChange(manager, webhook, 'webhook.deleted', principal, origin);
    });
  }

  /** Every endpoint change is audited in its own transaction, naming the endpoint. */
  private recordChange(
    manager: EntityManager,
    webhook: Webhook,
    action: string,
    principal: Principal,
    origin: RequestOrigin,
    details: Record<string, unknown> = {},
  ): Promise<void> {
    return this.audit.append(manager, [
      {
        organizationId: webhook.organizationId,
        action,
        actor: actorOf(principal),
        origin,
        details: { webhook_id: webhook.id, ...details },
      },
    ]);
  }

  async listDeliveries(
    principal: Principal,
    id: string,
    query: ListQueryDto,
  ): Promise<Page<WebhookDelivery>> {
    const webhook = await this.get(principal, id);
    return paginate(
      this.deliveries
        .createQueryBuilder('delivery')
        .where('delivery.webhook_id = :webhookId', { webhookId: webhook.id }),
      query,
    );
  }

  /** Sends a delivery again now, whatever its state; its event and webhook-id stay the same. */
  async retryDelivery(principal: Principal, id: string, deliveryId: string): Promise<WebhookDelivery> {
    const webhook = await this.get(principal, id);
    const delivery = isIdOf('delivery', deliveryId)
      ? await this.deliveries.findOneBy({ id: deliveryId, webhookId: webhook.id })
      : null;
    if (!delivery) throw notFound('The delivery');
    if (delivery.status === 'pending' && delivery.attempts === 0) {
      throw conflict('delivery_pending', 'The delivery has not been attempted yet.');
    }
    delivery.status = 'pending';
    delivery.nextAttemptAt = new Date();
    delivery.attempts = 0;
    return this.deliveries.save(delivery);
  }

  /** A `ping` to this endpoint only, through the normal delivery path. */
  async ping(principal: Principal, id: string): Promise<WebhookDelivery> {
    const webhook = await this.get(principal, id);
    return this.dataSource.transaction(async (manager) => {
      const event = await manager.save(
        manager.create(DomainEvent, {
          id: newId('event'),
          organizationId: webhook.organizationId,
          type: 'ping',
          data: { webhook_id: webhook.id },
          sealedSecret: null,
          dispatchedAt: new Date(),
        }),
      );
      return manager.save(
        manager.create(WebhookDelivery, {
          id: newId('delivery'),
          organizationId: webhook.organizationId,
          webhookId: webhook.id,
          eventId: event.id,
          eventType: 'ping',
          status: 'pending',
          attempts: 0,
          nextAttemptAt: new Date(),
          lastResponseStatus: null,
          lastError: null,
          deliveredAt: null,
        }),
      );
    });
  }
}
