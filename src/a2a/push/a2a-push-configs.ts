import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import type { Principal } from '../../access/principal';
import { OutboundTargetError } from '../../outbound/outbound.errors';
import { SafeHttpClient } from '../../outbound/safe-http-client';
import { SecretBox } from '../../secrets/secret-box';
import { Secrets } from '../../secrets/secrets';
import { TasksService } from '../../tasks/tasks.service';
import { A2aPushConfig } from './a2a-push-config.entity';

export interface A2aPushConfigView {
  id: string;
  taskId: string;
  url: string;
  hasToken: boolean;
}

/** No config of that id for the task. */
export class A2aPushConfigNotFound extends Error {}
/** A config's URL the outbound policy refuses, or not a URL at all. */
export class A2aPushUrlRefused extends Error {}

const MAX_ID_LENGTH = 100;
const MAX_URL_LENGTH = 2048;
const MAX_TOKEN_LENGTH = 1000;

const viewOf = (config: A2aPushConfig): A2aPushConfigView => ({
  id: config.id,
  taskId: config.taskId,
  url: config.url,
  hasToken: config.sealedToken !== null,
});

/**
 * A task's push notification configs (CONTRACT, "Agents for other agents: A2A"): each status change of
 * the task after a config exists is delivered to its URL by the webhook worker (A2aPushDeliveries). The
 * task must be the caller's organization's, as TasksService.get answers (its not-found error otherwise);
 * every query names the organization.
 */
@Injectable()
export class A2aPushConfigs {
  private readonly tokens: SecretBox;

  constructor(
    @InjectRepository(A2aPushConfig) private readonly configs: Repository<A2aPushConfig>,
    private readonly tasks: TasksService,
    private readonly http: SafeHttpClient,
    secrets: Secrets,
  ) {
    this.tokens = secrets.sealer('a2a-push-tokens');
  }

  /** Creates the config, or replaces the URL and token of the task's config of the same id. */
  async create(
    principal: Principal,
    taskId: string,
    config: { id?: string; url: string; token?: string },
  ): Promise<A2aPushConfigView> {
    const task = await this.tasks.get(principal, taskId);
    const id = config.id ?? randomUUID();
    if (!id || id.length > MAX_ID_LENGTH) {
      throw new A2aPushUrlRefused(`A push config's id is 1 to ${MAX_ID_LENGTH} characters.`);
    }
    if (config.token !== undefined && config.token.length > MAX_TOKEN_LENGTH) {
      throw new A2aPushUrlRefused(`A push config's token is at most ${MAX_TOKEN_LENGTH} characters.`);
    }
    await this.assertDeliverable(config.url);
    await this.configs.upsert(
      {
        taskId: task.id,
        id,
        organizationId: principal.organizationId,
        url: config.url,
        sealedToken: config.token ? this.tokens.seal(config.token) : null,
      },
      { conflictPaths: ['taskId', 'id'], skipUpdateIfNoValuesChanged: false },
    );
    return this.get(principal, task.id, id);
  }

  async get(principal: Principal, taskId: string, id: string): Promise<A2aPushConfigView> {
    const task = await this.tasks.get(principal, taskId);
    const config = await this.configs.findOneBy({
      organizationId: principal.organizationId,
      taskId: task.id,
      id,
    });
    if (!config) throw new A2aPushConfigNotFound(`The task has no push notification config ${id}.`);
    return viewOf(config);
  }

  async list(principal: Principal, taskId: string): Promise<A2aPushConfigView[]> {
    const task = await this.tasks.get(principal, taskId);
    const configs = await this.configs.find({
      where: { organizationId: principal.organizationId, taskId: task.id },
      order: { createdAt: 'ASC', id: 'ASC' },
    });
    return configs.map(viewOf);
  }

  /** Deletes it: later status changes are not sent, and a delivery not made yet ends at its next attempt. */
  async delete(principal: Principal, taskId: string, id: string): Promise<void> {
    const task = await this.tasks.get(principal, taskId);
    const { affected } = await this.configs.delete({
      organizationId: principal.organizationId,
      taskId: task.id,
      id,
    });
    if (!affected) throw new A2aPushConfigNotFound(`The task has no push notification config ${id}.`);
  }

  /** An http(s) URL the outbound policy allows (no private target unless ALLOW_PRIVATE_NETWORK_TARGETS). */
  private async assertDeliverable(url: string): Promise<void> {
    if (url.length > MAX_URL_LENGTH || !/^https?:\/\//i.test(url)) {
      throw new A2aPushUrlRefused(
        `A push config's url is an http(s) URL of at most ${MAX_URL_LENGTH} characters.`,
      );
    }
    try {
      await this.http.assertAllowedTarget(url);
    } catch (error) {
      if (error instanceof OutboundTargetError) throw new A2aPushUrlRefused(error.message);
      throw error;
    }
  }
}
