import { type DeliveryTarget, DeliveryTargets } from './delivery-targets';
import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { actorOf, AuditService, RequestOrigin } from '../audit/audit.service';
import type { Principal } from '../access/principal';
import { isIdOf, newId } from '../common/ids';
import { DELIVERY_ID, WEBHOOK_ID, type WebhookAuditAction } from './webhooks.declarations';
import { ListQueryDto, Page } from '../common/pagination';
import { EventsService } from '../events/events.service';
import { SecretBox } from '../secrets/secret-box';
import { Secrets } from '../secrets/secrets';
import { SafeHttpClient } from '../outbound/safe-http-client';
import { CreateWebhookDto, UpdateWebhookDto } from './dto/webhook.dto';
import type { WebhookDelivery } from './webhook-delivery.entity';
import { newWebhookSecret } from './webhook-signature';
import type { Webhook } from './webhook.entity';
import { WebhookEventTypes } from './webhook-event-types';
import { WebhooksRepository } from './webhooks.repository';
import { WebhookError, WebhookErrorCode } from './webhooks.errors';

/** Webhook endpoints of an organization, their secrets and their deliveries. */
@Injectable()
export class WebhooksService {
  readonly secrets: SecretBox;

  constructor(
    private readonly repository: WebhooksRepository,
    private readonly events: EventsService,
    private readonly http: SafeHttpClient,
    private readonly audit: AuditService,
    private readonly eventTypes: WebhookEventTypes,
    private readonly targets: DeliveryTargets,
    secrets: Secrets,
  ) {
    this.secrets = secrets.sealer('webhook-secrets');
  }

  /** What attempts a delivery that is no webhook's (an A2A push notification, say): DeliveryTargets. */
  targetOf(delivery: WebhookDelivery): DeliveryTarget | undefined {
    return this.targets.of(delivery);
  }

  async create(
    principal: Principal,
    dto: CreateWebhookDto,
    origin: RequestOrigin,
  ): Promise<{ webhook: Webhook; secret: string }> {
    // First, as the pipe refuses the body's other fields: which events exist is this app's to know.
    this.eventTypes.assertSubscribable(dto.events);
    await this.http.assertAllowedTarget(dto.url);
    const secret = newWebhookSecret();
    const webhook = await this.repository.transaction(async (manager) => {
      const row = await this.repository.saveWebhook(
        manager,
        this.repository.newWebhook(manager, {
          id: newId(WEBHOOK_ID),
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
    return this.repository.pageWebhooks(principal.organizationId, query);
  }

  async get(principal: Principal, id: string): Promise<Webhook> {
    const webhook = isIdOf(WEBHOOK_ID, id)
      ? await this.repository.findWebhookInOrganization(principal.organizationId, id)
      : null;
    if (!webhook) throw new WebhookError(WebhookErrorCode.NotFound, 'The webhook was not found.');
    return webhook;
  }

  async update(
    principal: Principal,
    id: string,
    dto: UpdateWebhookDto,
    origin: RequestOrigin,
  ): Promise<Webhook> {
    this.eventTypes.assertSubscribable(dto.events);
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
    return this.repository.transaction(async (manager) => {
      const saved = await this.repository.saveWebhook(manager, webhook);
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
    const saved = await this.repository.transaction(async (manager) => {
      const row = await this.repository.saveWebhook(manager, webhook);
      await this.recordChange(manager, row, 'webhook.secret_rotated', principal, origin);
      return row;
    });
    return { webhook: saved, secret };
  }

  async delete(principal: Principal, id: string, origin: RequestOrigin): Promise<void> {
    const webhook = await this.get(principal, id);
    await this.repository.transaction(async (manager) => {
      await this.repository.deleteWebhook(manager, webhook.id);
      await this.recordChange(manager, webhook, 'webhook.deleted', principal, origin);
    });
  }

  /** Every endpoint change is audited in its own transaction, naming the endpoint. */
  private recordChange(
    manager: EntityManager,
    webhook: Webhook,
    action: WebhookAuditAction,
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
    return this.repository.pageDeliveries(webhook.id, query);
  }

  /** Sends a delivery again now, whatever its state; its event and webhook-id stay the same. */
  async retryDelivery(principal: Principal, id: string, deliveryId: string): Promise<WebhookDelivery> {
    const webhook = await this.get(principal, id);
    const delivery = isIdOf(DELIVERY_ID, deliveryId)
      ? await this.repository.findDelivery(webhook.id, deliveryId)
      : null;
    if (!delivery) throw new WebhookError(WebhookErrorCode.NotFound, 'The delivery was not found.');
    if (delivery.status === 'pending' && delivery.attempts === 0) {
      throw new WebhookError(WebhookErrorCode.DeliveryPending, 'The delivery has not been attempted yet.');
    }
    delivery.status = 'pending';
    delivery.nextAttemptAt = new Date();
    delivery.attempts = 0;
    return this.repository.saveDelivery(delivery);
  }

  /** A `ping` to this endpoint only, through the normal delivery path. */
  async ping(principal: Principal, id: string): Promise<WebhookDelivery> {
    const webhook = await this.get(principal, id);
    return this.repository.transaction(async (manager) => {
      const event = await this.events.recordDirect(manager, {
        organizationId: webhook.organizationId,
        type: 'ping',
        data: { webhook_id: webhook.id },
      });
      return this.repository.saveDelivery(
        this.repository.newDelivery(manager, {
          id: newId(DELIVERY_ID),
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
        manager,
      );
    });
  }
}
