import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { StreamResponse } from '@a2a-js/sdk';
import { DataSource, type Repository } from 'typeorm';
import { SafeHttpClient } from '../../outbound/safe-http-client';
import { SecretBox } from '../../secrets/secret-box';
import { Secrets } from '../../secrets/secrets';
import type { TaskStatus } from '../../tasks/task.entity';
import type { DeliveryOutcome, DeliveryTarget } from '../../webhooks/delivery-targets';
import type { WebhookDelivery } from '../../webhooks/webhook-delivery.entity';
import { a2aStatusOf, contextIdOf } from '../a2a-task-views';
import { A2aPushConfig } from './a2a-push-config.entity';

/** The header that carries a config's token to its receiver (A2A's push notification authentication). */
export const NOTIFICATION_TOKEN_HEADER = 'X-A2A-Notification-Token';

/**
 * Attempts a push delivery for the webhook worker (a DeliveryTarget: the rows the A2aPushConfigs
 * migration's trigger writes): a POST of the status change as A2A 1.0's `{statusUpdate}`, read from the
 * task's status event, with the config's token in X-A2A-Notification-Token, through the outbound policy.
 */
@Injectable()
export class A2aPushDeliveries implements DeliveryTarget {
  private readonly tokens: SecretBox;

  constructor(
    @InjectRepository(A2aPushConfig) private readonly configs: Repository<A2aPushConfig>,
    private readonly dataSource: DataSource,
    private readonly http: SafeHttpClient,
    secrets: Secrets,
  ) {
    this.tokens = secrets.sealer('a2a-push-tokens');
  }

  owns(delivery: WebhookDelivery): boolean {
    return delivery.a2aPushConfigId !== null;
  }

  async attempt(delivery: WebhookDelivery): Promise<DeliveryOutcome> {
    const config = await this.configs.findOneBy({
      organizationId: delivery.organizationId,
      taskId: delivery.a2aTaskId!,
      id: delivery.a2aPushConfigId!,
    });
    const [change] = await this.dataSource.query<
      {
        context_id: string | null;
        error: { code: string; message: string } | null;
        status: TaskStatus;
        at: Date;
      }[]
    >(
      `SELECT t.context_id, t.error, e.data->>'status' AS status, e.created_at AS at
         FROM task_events e JOIN tasks t ON t.id = e.task_id
        WHERE e.task_id = $1 AND e.seq = $2 AND t.organization_id = $3`,
      [delivery.a2aTaskId, delivery.a2aEventSeq, delivery.organizationId],
    );
    if (!config || !change) return { failed: true, final: true, error: 'push_config_or_task_gone' };
    const task = { id: config.taskId, contextId: change.context_id, error: change.error };
    const body = StreamResponse.toJSON({
      payload: {
        $case: 'statusUpdate',
        value: {
          taskId: task.id,
          contextId: contextIdOf(task),
          metadata: undefined,
          status: a2aStatusOf(task, change.status, new Date(change.at)),
        },
      },
    });
    const token = config.sealedToken ? this.tokens.open(config.sealedToken) : undefined;
    try {
      const response = await this.http.postJson(config.url, body, {
        headers: token ? { [NOTIFICATION_TOKEN_HEADER]: token } : {},
        maxBytes: 64 * 1024,
      });
      const ok = response.status >= 200 && response.status < 300;
      return { failed: !ok, status: response.status, error: ok ? null : `HTTP ${response.status}` };
    } catch (error) {
      return { failed: true, error: (error as Error).message.slice(0, 500) };
    }
  }
}
