import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Role, StreamResponse } from '@a2a-js/sdk';
import { DataSource, type Repository } from 'typeorm';
import { SafeHttpClient } from '../../outbound/safe-http-client';
import { SecretBox } from '../../secrets/secret-box';
import { Secrets } from '../../secrets/secrets';
import type { TaskStatus } from '../../tasks/task.entity';
import type { DeliveryOutcome, DeliveryTarget } from '../../webhooks/delivery-targets';
import type { WebhookDelivery } from '../../webhooks/webhook-delivery.entity';
import { a2aStateOf } from '../a2a-task-states';
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
    const taskId = config.taskId;
    const contextId = change.context_id ?? taskId;
    const body = StreamResponse.toJSON({
      payload: {
        $case: 'statusUpdate',
        value: {
          taskId,
          contextId,
          metadata: undefined,
          status: {
            state: a2aStateOf(change.status),
            timestamp: new Date(change.at).toISOString(),
            message:
              change.status === 'failed' && change.error
                ? {
                    messageId: `${taskId}-error`,
                    contextId,
                    taskId,
                    role: Role.ROLE_AGENT,
                    parts: [
                      {
                        content: { $case: 'text', value: `${change.error.code}: ${change.error.message}` },
                        metadata: undefined,
                        filename: '',
                        mediaType: '',
                      },
                    ],
                    metadata: undefined,
                    extensions: [],
                    referenceTaskIds: [],
                  }
                : undefined,
          },
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
