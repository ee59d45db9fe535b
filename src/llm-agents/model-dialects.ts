import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { StreamingFetch } from '../outbound/safe-http-client';
import { DEFAULT_BASE_URLS, type LlmProvider } from './llm-config';
import { readServerSentEvents } from './server-sent-events';

const safeJson = (text: string): unknown => {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
};

/** One request of a run, in the terms both providers share. */
export interface ModelRequest {
  baseUrl: string;
  secret: string;
  model: string;
  system?: string;
  user: string;
  /** The agent's max_output_tokens and the budget's cap, the lower; absent when neither applies. */
  maxOutputTokens?: number;
  temperature?: number;
}

/** What the provider said of the whole answer once its stream ended. */
export interface ModelAnswer {
  model: string;
  finishReason: string | null;
  /** Every input token billed, cached ones included. */
  inputTokens: number;
  outputTokens: number;
}

export interface ModelDialect {
  /** Streams the answer, each text delta to `onDelta` as it arrives; rejects with the SDK's errors. */
  stream(request: ModelRequest, onDelta: (text: string) => void, signal: AbortSignal): Promise<ModelAnswer>;
}

// The SDKs' own limits stay out of the way: retries are the task's attempts, and silence is bounded by
// the outbound client (OUTBOUND_TIMEOUT_MS between bytes); the abort signal ends a run at once.
const SDK_TIMEOUT_MS = 60 * 60 * 1000;
// Anthropic requires a cap; one agents can raise with max_output_tokens.
const ANTHROPIC_DEFAULT_MAX_TOKENS = 4096;

/** Chat Completions, streamed with usage: OpenAI, and vLLM, Ollama, llama.cpp and the like. */
class ChatCompletionsDialect implements ModelDialect {
  constructor(private readonly fetch: StreamingFetch) {}

  async stream(
    request: ModelRequest,
    onDelta: (text: string) => void,
    signal: AbortSignal,
  ): Promise<ModelAnswer> {
    const client = new OpenAI({
      apiKey: request.secret,
      baseURL: request.baseUrl,
      // Nothing from this process's environment (OPENAI_ORG_ID, OPENAI_PROJECT_ID) goes upstream.
      organization: null,
      project: null,
      fetch: this.fetch,
      maxRetries: 0,
      timeout: SDK_TIMEOUT_MS,
    });
    // OpenAI's own API takes max_completion_tokens (its reasoning models refuse max_tokens); the servers
    // that speak its dialect all take max_tokens, not all the newer name.
    const capField = request.baseUrl === DEFAULT_BASE_URLS.openai ? 'max_completion_tokens' : 'max_tokens';
    const response = await client.chat.completions
      .create(
        {
          model: request.model,
          messages: [
            ...(request.system ? [{ role: 'system' as const, content: request.system }] : []),
            { role: 'user' as const, content: request.user },
          ],
          stream: true,
          stream_options: { include_usage: true },
          ...(request.maxOutputTokens !== undefined ? { [capField]: request.maxOutputTokens } : {}),
          ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
        },
        { signal },
      )
      .asResponse();
    const answer: ModelAnswer = { model: request.model, finishReason: null, inputTokens: 0, outputTokens: 0 };
    let done = false;
    // The SDK's Stream, message by message (see readServerSentEvents): `[DONE]` ends the answer, and a
    // chunk carrying `error` is the SDK's APIError.
    await readServerSentEvents(response.body, (_event, data) => {
      if (done || data.startsWith('[DONE]')) {
        done = true;
        return;
      }
      const chunk = JSON.parse(data) as OpenAI.ChatCompletionChunk & { error?: unknown };
      if (chunk.error) throw new OpenAI.APIError(undefined, chunk.error, undefined, response.headers);
      if (chunk.model) answer.model = chunk.model;
      const choice = chunk.choices?.[0];
      if (choice?.delta?.content) onDelta(choice.delta.content);
      if (choice?.finish_reason) answer.finishReason = choice.finish_reason;
      if (chunk.usage) {
        // prompt_tokens counts the cached ones (prompt_tokens_details.cached_tokens is a part of it), and
        // completion_tokens the reasoning ones.
        answer.inputTokens = chunk.usage.prompt_tokens ?? 0;
        answer.outputTokens = chunk.usage.completion_tokens ?? 0;
      }
    });
    return answer;
  }
}

/**
 * The SDK's client with the agent's secret as its only credential: without an explicit key it would
 * look for one of this process's own (ANTHROPIC_* variables, credential profiles on disk) and could even
 * take its base URL from them.
 */
class SecretOnlyAnthropic extends Anthropic {
  protected override _shouldResolveDefaultCredentials(): boolean {
    return false;
  }
}

/** Anthropic's Messages API, streamed. */
class MessagesDialect implements ModelDialect {
  constructor(private readonly fetch: StreamingFetch) {}

  async stream(
    request: ModelRequest,
    onDelta: (text: string) => void,
    signal: AbortSignal,
  ): Promise<ModelAnswer> {
    const client = new SecretOnlyAnthropic({
      // The Messages API's own header (the SDK would send an apiKey as a bearer token).
      apiKey: null,
      authToken: null,
      defaultHeaders: { 'x-api-key': request.secret },
      baseURL: request.baseUrl,
      fetch: this.fetch,
      maxRetries: 0,
      timeout: SDK_TIMEOUT_MS,
    });
    const response = await client.messages
      .create(
        {
          model: request.model,
          max_tokens: request.maxOutputTokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS,
          ...(request.system ? { system: request.system } : {}),
          messages: [{ role: 'user', content: request.user }],
          ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
          stream: true,
        },
        { signal },
      )
      .asResponse();
    const answer: ModelAnswer = { model: request.model, finishReason: null, inputTokens: 0, outputTokens: 0 };
    // The SDK's MessageStream, message by message (see readServerSentEvents): unnamed messages and
    // `ping` are skipped, `error` is the SDK's APIError.
    await readServerSentEvents(response.body, (name, data) => {
      if (name === null || name === 'ping' || !data) return;
      if (name === 'error') {
        const body = safeJson(data) as { error?: { type?: Anthropic.ErrorType } } | undefined;
        throw new Anthropic.APIError(undefined, body ?? data, undefined, response.headers, body?.error?.type);
      }
      const event = JSON.parse(data) as Anthropic.RawMessageStreamEvent;
      switch (event.type) {
        case 'message_start': {
          const { usage, model } = event.message;
          answer.model = model || answer.model;
          // Input billed: fresh, written to the cache and read from it.
          answer.inputTokens =
            (usage.input_tokens ?? 0) +
            (usage.cache_creation_input_tokens ?? 0) +
            (usage.cache_read_input_tokens ?? 0);
          answer.outputTokens = usage.output_tokens ?? 0;
          break;
        }
        case 'content_block_delta':
          if (event.delta.type === 'text_delta') onDelta(event.delta.text);
          break;
        case 'message_delta':
          if (event.delta.stop_reason) answer.finishReason = event.delta.stop_reason;
          // Cumulative counts: the last one is the answer's.
          answer.outputTokens = event.usage.output_tokens ?? answer.outputTokens;
          break;
      }
    });
    return answer;
  }
}

export function dialectOf(provider: LlmProvider, fetch: StreamingFetch): ModelDialect {
  return provider === 'openai' ? new ChatCompletionsDialect(fetch) : new MessagesDialect(fetch);
}
