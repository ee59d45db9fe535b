import { Injectable } from '@nestjs/common';
import type { WebhookDelivery } from './webhook-delivery.entity';

/** What one attempt of a delivery came to. */
export interface DeliveryOutcome {
  failed: boolean;
  /** The receiver's HTTP status, when it answered. */
  status?: number;
  error: string | null;
  /** A failure no retry can mend (the target is gone). */
  final?: boolean;
}

/**
 * A kind of delivery other than a webhook's, which the webhook worker claims, retries on its schedule and
 * settles like any other (WebhookDeliveryWorker): a module writes rows of webhook_deliveries of its own
 * (its columns set, `webhook_id` null) and registers how one is attempted. A2A's push notifications are
 * one (src/a2a/push).
 */
export interface DeliveryTarget {
  /** Whether the delivery is this target's. */
  owns(delivery: WebhookDelivery): boolean;
  /** One attempt: the request and what came of it (it throws only when it cannot tell). */
  attempt(delivery: WebhookDelivery): Promise<DeliveryOutcome>;
}

@Injectable()
export class DeliveryTargets {
  private readonly targets: DeliveryTarget[] = [];

  /** At a module's init, in every process that runs the webhook worker. */
  register(target: DeliveryTarget): void {
    this.targets.push(target);
  }

  of(delivery: WebhookDelivery): DeliveryTarget | undefined {
    return this.targets.find((target) => target.owns(delivery));
  }
}
