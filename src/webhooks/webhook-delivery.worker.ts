import { counter } from '../telemetry/telemetry';
import { ConfigOf } from '../config/config-namespace';
import { lifecycleConfig, outboundConfig, webhooksConfig } from '../config/namespaces';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import type { EntityManager } from 'typeorm';
import { AuditService, SYSTEM_ACTOR } from '../audit/audit.service';
import { newId } from '../common/ids';
import { DELIVERY_ID } from './webhooks.declarations';
import { EventsService } from '../events/events.service';
import { SafeHttpClient } from '../outbound/safe-http-client';
import type { DomainEvent } from '../events/event.entity';
import type { WebhookDelivery } from './webhook-delivery.entity';
import type { DeliveryOutcome } from './delivery-targets';
import { signWebhook } from './webhook-signature';
import type { Webhook } from './webhook.entity';
import { type DeliverySettlement, WebhooksRepository } from './webhooks.repository';
import { WebhooksService } from './webhooks.service';

const FAN_OUT_BATCH = 100;
const DELIVERY_BATCH = 20;

/**
 * An endpoint receives the events it subscribes to that happened once it existed. Fan-out runs behind
 * the events by a poll or more, so without the time check an endpoint created in that gap would also
 * receive an event from before it was created.
 */
function receives(
  webhook: Webhook,
  event: Pick<DomainEvent, 'organizationId' | 'type' | 'createdAt'>,
): boolean {
  return (
    webhook.organizationId === event.organizationId &&
    webhook.events.includes(event.type) &&
    webhook.createdAt.getTime() <= event.createdAt.getTime()
  );
}

/**
 * Turns outbox events into signed HTTP deliveries. Two steps, both safe with many instances:
 * fan-out claims undispatched events (FOR UPDATE SKIP LOCKED) and creates one delivery per
 * subscribed endpoint in the same transaction; delivery claims due deliveries by pushing their
 * next attempt past the call's timeout, so a worker that dies mid-call leaves the delivery due again
 * (at least once). Failures retry on WEBHOOK_RETRY_SCHEDULE_SECONDS with ±20% jitter; an endpoint
 * failing WEBHOOK_DISABLE_AFTER_FAILURES times in a row is disabled and that is audited.
 */
@Injectable()
export class WebhookDeliveryWorker implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Webhooks');
  private readonly schedule: number[];
  private stopping = false;
  private loops: Promise<void>[] = [];

  constructor(
    @Inject(webhooksConfig.KEY) private readonly config: ConfigOf<typeof webhooksConfig>,
    @Inject(outboundConfig.KEY) private readonly outbound: ConfigOf<typeof outboundConfig>,
    @Inject(lifecycleConfig.KEY) private readonly lifecycle: ConfigOf<typeof lifecycleConfig>,
    private readonly repository: WebhooksRepository,
    private readonly webhooks: WebhooksService,
    private readonly events: EventsService,
    private readonly http: SafeHttpClient,
    private readonly audit: AuditService,
  ) {
    this.schedule = config.retryScheduleSeconds;
  }

  onApplicationBootstrap(): void {
    for (let i = 0; i < this.config.workers; i++) this.loops.push(this.loop());
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      let worked = 0;
      try {
        worked = (await this.fanOut()) + (await this.deliverDue());
      } catch (error) {
        this.logger.warn(`delivery loop: ${(error as Error).message}`);
      }
      if (!worked) await sleep(this.config.pollMs, undefined, { ref: false });
    }
  }

  /** One delivery per (event, subscribed enabled endpoint); returns how many events were dispatched. */
  async fanOut(): Promise<number> {
    return this.repository.transaction(async (manager) => {
      const events = await this.events.claimUndispatched(manager, FAN_OUT_BATCH);
      if (!events.length) return 0;
      const organizations = [...new Set(events.map((e) => e.organizationId))];
      const endpoints = await this.repository.enabledWebhooksOf(manager, organizations);
      const rows = events.flatMap((event) =>
        endpoints
          .filter((w) => receives(w, event))
          .map((w) => ({
            id: newId(DELIVERY_ID),
            organizationId: event.organizationId,
            webhookId: w.id,
            eventId: event.id,
            eventType: event.type,
            status: 'pending' as const,
            attempts: 0,
            nextAttemptAt: new Date(),
          })),
      );
      await this.repository.insertDeliveries(manager, rows);
      await this.events.markDispatched(
        manager,
        events.map((e) => e.id),
      );
      return events.length;
    });
  }

  /**
   * Attempts due deliveries; returns how many were attempted. Every attempt is settled before it returns
   * (none left running behind the loop's back); when some could not be recorded, it throws them together,
   * and those deliveries are due again once their claim runs out.
   */
  async deliverDue(): Promise<number> {
    const visibilityMs = this.outbound.timeoutMs * 2 + 5000;
    const deliveries = await this.repository.claimDue(visibilityMs, DELIVERY_BATCH);
    if (!deliveries.length) return 0;
    const results = await Promise.allSettled(deliveries.map((delivery) => this.attempt(delivery)));
    const errors = results.flatMap((result) =>
      result.status === 'rejected' ? [result.reason as Error] : [],
    );
    if (errors.length) {
      throw new AggregateError(
        errors,
        `${errors.length} of ${deliveries.length} deliveries not recorded: ${errors[0].message}`,
      );
    }
    return deliveries.length;
  }

  private async attempt(delivery: WebhookDelivery): Promise<void> {
    if (delivery.webhookId === null || delivery.eventId === null) return this.attemptForTarget(delivery);
    const webhook = await this.repository.findWebhook(delivery.webhookId);
    const event = await this.events.find(delivery.eventId);
    if (!webhook || !event)
      return this.record(delivery, { failed: true, final: true, error: 'endpoint_or_event_gone' });
    if (!webhook.enabled)
      return this.record(delivery, { failed: true, final: true, error: 'endpoint_disabled' });

    const secretValue = this.events.openSecret(event);
    const body = JSON.stringify({
      type: event.type,
      timestamp: event.createdAt.toISOString(),
      // The one case a key value leaves the service: the new value of a policy rotation.
      data: secretValue ? { ...event.data, key: secretValue } : event.data,
    });
    const timestamp = Math.floor(Date.now() / 1000);
    const secret = this.webhooks.secrets.open(webhook.sealedSecret);
    try {
      const response = await this.http.post(webhook.url, body, {
        headers: {
          'webhook-id': event.id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signWebhook(secret, event.id, timestamp, body),
        },
        maxBytes: 64 * 1024,
      });
      const ok = response.status >= 200 && response.status < 300;
      await this.record(delivery, {
        failed: !ok,
        status: response.status,
        error: ok ? null : `HTTP ${response.status}`,
      });
    } catch (error) {
      await this.record(delivery, { failed: true, error: (error as Error).message.slice(0, 500) });
    }
  }

  /**
   * A delivery of another kind (DeliveryTargets): attempted by its target, retried on the same schedule,
   * with no endpoint to count failures against; one no target owns ends, as its kind is not loaded here.
   */
  private async attemptForTarget(delivery: WebhookDelivery): Promise<void> {
    const target = this.webhooks.targetOf(delivery);
    const outcome: DeliveryOutcome = target
      ? await target
          .attempt(delivery)
          .catch((error: Error) => ({ failed: true, error: error.message.slice(0, 500) }))
      : { failed: true, final: true, error: 'no_delivery_target' };
    await this.repository.transaction((manager) =>
      this.repository.settle(manager, delivery.id, this.settlementOf(delivery, outcome, true)),
    );
  }

  /**
   * What an attempt settles a delivery to: succeeded, due again on the retry schedule (±20% jitter), or
   * failed for good once the schedule ran out, the failure is final, or the target is off.
   */
  /** Delivery attempts by what they settled to (an OTLP metric, with telemetry on). */
  private readonly deliveryAttempts = counter(
    'gatehouse.webhook.delivery_attempts',
    'Webhook delivery attempts',
  );

  private settlementOf(
    delivery: WebhookDelivery,
    outcome: DeliveryOutcome,
    targetOn: boolean,
  ): DeliverySettlement {
    const retryIn = this.schedule[delivery.attempts - 1];
    const giveUp = outcome.failed && (retryIn === undefined || outcome.final === true || !targetOn);
    const status = !outcome.failed ? 'succeeded' : giveUp ? 'failed' : 'pending';
    // Every attempt settles once, here: counted by what it settled to (`pending`: to be retried).
    this.deliveryAttempts.add(1, { status });
    return {
      status,
      lastResponseStatus: outcome.status ?? null,
      lastError: outcome.error,
      deliveredAt: outcome.failed ? null : new Date(),
      nextAttemptAt:
        outcome.failed && !giveUp
          ? new Date(Date.now() + retryIn * 1000 * (0.8 + Math.random() * 0.4))
          : null,
    };
  }

  /**
   * Settles an attempt, and counts it against the endpoint. The endpoint row is locked first, as in every
   * transaction that changes an endpoint and its deliveries (see WebhooksRepository), and read fresh: once
   * another loop has disabled it, a failure here ends the delivery instead of scheduling a retry, and is
   * not counted again.
   */
  private async record(delivery: WebhookDelivery, outcome: DeliveryOutcome): Promise<void> {
    await this.repository.transaction(async (manager) => {
      const webhook = await this.repository.lockWebhook(manager, delivery.webhookId!);
      const endpointOn = webhook !== null && webhook.enabled;
      await this.repository.settle(manager, delivery.id, this.settlementOf(delivery, outcome, endpointOn));
      if (!endpointOn || outcome.final) return;
      if (!outcome.failed) {
        await this.repository.resetFailures(manager, webhook.id);
        return;
      }
      await this.countFailure(manager, webhook);
    });
  }

  private async countFailure(manager: EntityManager, webhook: Webhook): Promise<void> {
    // The caller holds the endpoint's lock and saw it enabled: exactly one failure disables it.
    const failures = await this.repository.countFailure(manager, webhook.id);
    if (failures === undefined || failures < this.config.disableAfterFailures) return;
    const reason = `${failures} consecutive failed deliveries`;
    await this.repository.disable(manager, webhook.id, reason);
    await this.audit.append(manager, [
      {
        organizationId: webhook.organizationId,
        action: 'webhook.disabled',
        actor: SYSTEM_ACTOR,
        details: { webhook_id: webhook.id, reason },
      },
    ]);
    this.logger.warn(`disabled webhook ${webhook.id}: ${reason}`);
  }

  /** First phase of shutdown: the database is still open to finish or hand back work. */
  async onModuleDestroy(): Promise<void> {
    this.stopping = true;
    await Promise.race([
      Promise.all(this.loops),
      sleep(this.lifecycle.shutdownGraceMs / 2, undefined, { ref: false }),
    ]);
  }
}
