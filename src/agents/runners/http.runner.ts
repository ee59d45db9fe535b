import { Injectable, OnModuleInit } from '@nestjs/common';
import { OutboundError, SafeHttpClient } from '../../outbound/safe-http-client';
import { AgentFailure, AgentRunContext, AgentRunner, AgentRunners } from '../agent-runner';
import { AgentError, AgentErrorCode } from '../agents.errors';

interface HttpAgentConfig {
  url: string;
  timeout_ms?: number;
  /** Runs of this agent at once per worker process (the worker reads it: maxConcurrencyOf). */
  max_concurrency?: number;
}

const invalidConfig = (message: string): AgentError =>
  new AgentError(AgentErrorCode.InvalidConfig, message, { errors: [{ field: 'config', message }] });

/**
 * `http` agents: the task is POSTed as JSON to `config.url` through the outbound-safety client, and
 * the JSON answer becomes the result. 5xx, timeouts and connection failures are retried; a 4xx or a
 * non-JSON answer fails the task at once. `config.max_concurrency` (1..1000) caps the agent's runs at once
 * in each worker process; unset, only WORKER_CONCURRENCY bounds them.
 */
@Injectable()
export class HttpRunner implements AgentRunner, OnModuleInit {
  readonly type = 'http';
  readonly needsAgent = true;

  constructor(
    private readonly runners: AgentRunners,
    private readonly http: SafeHttpClient,
  ) {}

  onModuleInit(): void {
    this.runners.register(this);
  }

  async validateConfig(config: Record<string, unknown>): Promise<void> {
    const allowed = new Set(['url', 'timeout_ms', 'max_concurrency']);
    const unknown = Object.keys(config).filter((k) => !allowed.has(k));
    if (unknown.length) throw invalidConfig(`config.${unknown[0]} is not allowed`);
    if (typeof config.url !== 'string' || config.url.length > 2000) {
      throw invalidConfig('config.url must be an http(s) URL of at most 2000 characters');
    }
    const timeout = config.timeout_ms;
    if (
      timeout !== undefined &&
      (!Number.isInteger(timeout) || (timeout as number) < 100 || (timeout as number) > 300000)
    ) {
      throw invalidConfig('config.timeout_ms must be an integer between 100 and 300000');
    }
    const maxConcurrency = config.max_concurrency;
    if (
      maxConcurrency !== undefined &&
      (!Number.isInteger(maxConcurrency) ||
        (maxConcurrency as number) < 1 ||
        (maxConcurrency as number) > 1000)
    ) {
      throw invalidConfig('config.max_concurrency must be an integer between 1 and 1000');
    }
    await this.http.assertAllowedTarget(config.url);
  }

  async run({ task, agent, outboundHeaders, signal }: AgentRunContext): Promise<unknown> {
    const config = agent!.config as unknown as HttpAgentConfig;
    let response;
    try {
      response = await this.http.postJson(
        config.url,
        {
          task_id: task.id,
          instruction: task.instruction,
          attachments: task.attachments.map((file) => ({
            id: file.id,
            filename: file.filename,
            content_type: file.contentType,
            size: file.size,
            sha256: file.sha256,
          })),
        },
        { headers: outboundHeaders, timeoutMs: config.timeout_ms, signal },
      );
    } catch (error) {
      if (error instanceof OutboundError) {
        throw new AgentFailure(
          error.code,
          error.message,
          !['target_not_allowed', 'redirect_not_followed'].includes(error.code),
        );
      }
      throw new AgentFailure('agent_unreachable', (error as Error).message, true);
    }
    if (response.status >= 500)
      throw new AgentFailure('agent_error', `the agent answered ${response.status}`, true);
    if (response.status >= 300)
      throw new AgentFailure('agent_rejected', `the agent answered ${response.status}`, false);
    try {
      return JSON.parse(response.body) as unknown;
    } catch {
      throw new AgentFailure('invalid_agent_response', 'the agent did not answer with JSON', false);
    }
  }
}
