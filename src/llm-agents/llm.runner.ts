import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { ConfigOf } from '../config/config-namespace';
import { llmAgentsConfig } from '../config/namespaces';
import {
  AgentConfigContext,
  AgentFailure,
  AgentRunContext,
  AgentRunner,
  AgentRunners,
} from '../agents/agent-runner';
import { FILE_STORAGE, type FileStorage } from '../files/storage/file-storage';
import { OutboundError, SafeHttpClient } from '../outbound/safe-http-client';
import { BUDGET_EXCEEDED } from '../tasks/task-costs';
import { baseUrlOf, invalidConfig, type LlmAgentConfig, parseLlmConfig } from './llm-config';
import { userMessageOf } from './llm-prompt';
import { dialectOf, type ModelRequest } from './model-dialects';
import { OutputBatcher } from './output-batcher';
import { PROVIDER_SECRETS, type ProviderSecrets } from './provider-secrets';
import { upstreamFailure } from './upstream-failures';
import { outputTokenCap } from './output-budget';

/**
 * `llm` agents: a model behind an OpenAI-compatible Chat Completions API or Anthropic's Messages API,
 * called through the providers' SDKs with the outbound client as their fetch, with the organization's
 * secret as the provider's credential. Neither the caller's key nor a task token goes upstream
 * (`forwardsCredentials: false`: the worker mints no token and keeps no key for these tasks).
 */
@Injectable()
export class LlmRunner implements AgentRunner, OnModuleInit {
  readonly type = 'llm';
  readonly needsAgent = true;
  readonly forwardsCredentials = false;

  constructor(
    private readonly runners: AgentRunners,
    private readonly http: SafeHttpClient,
    @Inject(PROVIDER_SECRETS) private readonly secrets: ProviderSecrets,
    @Inject(FILE_STORAGE) private readonly storage: FileStorage,
    @Inject(llmAgentsConfig.KEY) private readonly config: ConfigOf<typeof llmAgentsConfig>,
  ) {}

  onModuleInit(): void {
    this.runners.register(this);
  }

  async validateConfig(raw: Record<string, unknown>, context?: AgentConfigContext): Promise<void> {
    const config = parseLlmConfig(raw);
    if (!context || !(await this.secrets.exists(context.organizationId, config.secret_id))) {
      throw invalidConfig('secret_id', 'config.secret_id names no secret of this organization');
    }
    try {
      await this.http.assertAllowedTarget(baseUrlOf(config));
    } catch (error) {
      throw invalidConfig('base_url', `config.base_url is refused: ${(error as Error).message}`);
    }
  }

  async run({ task, agent, signal, report }: AgentRunContext): Promise<unknown> {
    const config = agent!.config as unknown as LlmAgentConfig;
    const secret = await this.secrets.reveal(task.organizationId, config.secret_id);
    if (secret === undefined) {
      throw new AgentFailure('invalid_config', "the agent's secret was deleted", false);
    }
    const user = await userMessageOf(
      task.instruction,
      task.attachments,
      (file) => this.storage.read(file.storageKey),
      this.config.maxAttachmentBytes,
    );
    const cap = outputTokenCap(task, config.system, user);
    if (cap !== undefined && cap < 1) {
      throw new AgentFailure(BUDGET_EXCEEDED.code, BUDGET_EXCEEDED.message, false);
    }
    const caps = [cap, config.max_output_tokens].filter((n): n is number => n !== undefined);
    const request: ModelRequest = {
      baseUrl: baseUrlOf(config),
      secret,
      model: config.model,
      system: config.system,
      user,
      maxOutputTokens: caps.length ? Math.min(...caps) : undefined,
      temperature: config.temperature,
    };
    const output = new OutputBatcher((delta) => report.output(delta));
    let text = '';
    let answer;
    try {
      answer = await dialectOf(config.provider, this.http.streamingFetch()).stream(
        request,
        (delta) => {
          text += delta;
          output.add(delta);
        },
        signal,
      );
    } catch (error) {
      output.discard();
      // Cancelled, lease lost or budget_exceeded: the worker records nothing for this attempt.
      if (signal.aborted) throw error;
      if (error instanceof OutboundError && error.code === 'target_not_allowed') {
        throw new AgentFailure('target_not_allowed', error.message, false);
      }
      throw upstreamFailure(error, secret);
    }
    await output.finish();
    const usage = { input_tokens: answer.inputTokens, output_tokens: answer.outputTokens };
    await report.usage(usage);
    return { output: text, model: answer.model, finish_reason: answer.finishReason, usage };
  }
}
