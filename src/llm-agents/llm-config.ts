import { AgentError, AgentErrorCode } from '../agents/agents.errors';

export type LlmProvider = 'openai' | 'anthropic';

/** An llm agent's `config` (CONTRACT, "Model agents and provider secrets"). */
export interface LlmAgentConfig {
  provider: LlmProvider;
  model: string;
  secret_id: string;
  base_url?: string;
  system?: string;
  max_output_tokens?: number;
  temperature?: number;
}

/** Each provider's public API, when the agent names no `base_url`. */
export const DEFAULT_BASE_URLS: Readonly<Record<LlmProvider, string>> = {
  openai: 'https://api.openai.com/v1',
  anthropic: 'https://api.anthropic.com',
};

const MAX_TEMPERATURE: Readonly<Record<LlmProvider, number>> = { openai: 2, anthropic: 1 };
const ALLOWED = new Set([
  'provider',
  'model',
  'secret_id',
  'base_url',
  'system',
  'max_output_tokens',
  'temperature',
]);
const MAX_SYSTEM_BYTES = 32 * 1024;
export const MAX_OUTPUT_TOKENS = 200_000;

export const invalidConfig = (field: string, message: string): AgentError =>
  new AgentError(AgentErrorCode.InvalidConfig, message, { errors: [{ field: `config.${field}`, message }] });

/** The config's shape and bounds; the secret and the target are checked by the runner (they need I/O). */
export function parseLlmConfig(config: Record<string, unknown>): LlmAgentConfig {
  const unknown = Object.keys(config).find((key) => !ALLOWED.has(key));
  if (unknown) throw invalidConfig(unknown, `config.${unknown} is not allowed`);
  const { provider, model, secret_id, base_url, system, max_output_tokens, temperature } = config;
  if (provider !== 'openai' && provider !== 'anthropic') {
    throw invalidConfig('provider', 'config.provider must be "openai" or "anthropic"');
  }
  if (typeof model !== 'string' || !model.trim() || model.length > 200) {
    throw invalidConfig('model', 'config.model must be a model name of 1 to 200 characters');
  }
  if (typeof secret_id !== 'string' || !secret_id.startsWith('sec_')) {
    throw invalidConfig('secret_id', 'config.secret_id must name a secret of the organization (sec_…)');
  }
  if (base_url !== undefined && (typeof base_url !== 'string' || base_url.length > 2000)) {
    throw invalidConfig('base_url', 'config.base_url must be an http(s) URL of at most 2000 characters');
  }
  if (system !== undefined && (typeof system !== 'string' || Buffer.byteLength(system) > MAX_SYSTEM_BYTES)) {
    throw invalidConfig('system', 'config.system must be a string of at most 32 KiB');
  }
  if (
    max_output_tokens !== undefined &&
    (!Number.isInteger(max_output_tokens) ||
      (max_output_tokens as number) < 1 ||
      (max_output_tokens as number) > MAX_OUTPUT_TOKENS)
  ) {
    throw invalidConfig(
      'max_output_tokens',
      `config.max_output_tokens must be an integer from 1 to ${MAX_OUTPUT_TOKENS}`,
    );
  }
  const maxTemperature = MAX_TEMPERATURE[provider];
  if (
    temperature !== undefined &&
    (typeof temperature !== 'number' || !(temperature >= 0 && temperature <= maxTemperature))
  ) {
    throw invalidConfig(
      'temperature',
      `config.temperature must be a number from 0 to ${maxTemperature} for ${provider}`,
    );
  }
  return config as unknown as LlmAgentConfig;
}

export function baseUrlOf(config: LlmAgentConfig): string {
  return config.base_url ?? DEFAULT_BASE_URLS[config.provider];
}
