import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { AgentFailure } from '../agents/agent-runner';
import { OutboundError } from '../outbound/safe-http-client';

const MAX_MESSAGE_LENGTH = 1000;
const MAX_RETRY_AFTER_MS = 60_000;

interface ApiErrorLike {
  status?: number;
  headers?: Headers;
  error?: unknown;
  message: string;
  cause?: unknown;
}

const isApiError = (error: unknown): error is ApiErrorLike =>
  error instanceof OpenAI.APIError || error instanceof Anthropic.APIError;

/** The wait an upstream asked for (Retry-After in seconds or as a date, or retry-after-ms), capped. */
export function retryAfterMsOf(headers: Headers | undefined, now = Date.now()): number | undefined {
  const ms = Number(headers?.get('retry-after-ms'));
  if (headers?.get('retry-after-ms') && Number.isFinite(ms) && ms >= 0)
    return Math.min(ms, MAX_RETRY_AFTER_MS);
  const value = headers?.get('retry-after')?.trim();
  if (!value) return undefined;
  const seconds = Number(value);
  const wait = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(value) - now;
  return Number.isFinite(wait) ? Math.min(Math.max(0, wait), MAX_RETRY_AFTER_MS) : undefined;
}

/** The provider's own message: `{error: {message}}` (both providers' bodies), else the SDK's. */
function providerMessage(error: ApiErrorLike): string {
  const body = error.error as { message?: unknown; error?: { message?: unknown } } | undefined;
  const message = body?.error?.message ?? body?.message;
  return typeof message === 'string' && message ? message : error.message;
}

/** A message with every occurrence of the secret replaced, bounded in length. */
export function scrubbed(message: string, secret: string): string {
  const clean = secret ? message.split(secret).join('[secret]') : message;
  return clean.length > MAX_MESSAGE_LENGTH ? `${clean.slice(0, MAX_MESSAGE_LENGTH - 1)}…` : clean;
}

function outboundCause(error: unknown): OutboundError | undefined {
  for (
    let cause = error, depth = 0;
    cause && depth < 4;
    cause = (cause as { cause?: unknown }).cause, depth++
  ) {
    if (cause instanceof OutboundError) return cause;
  }
  return undefined;
}

/**
 * What a failed model call means for the task (CONTRACT, "Model agents"): a refused target is final
 * (`target_not_allowed`); 429 (after its Retry-After), 5xx (Anthropic's 529 too), timeouts and failed
 * connections are retried as the task's attempts; any other 4xx is final. Each `upstream_error`
 * carries the provider's message with the secret taken out.
 */
export function upstreamFailure(error: unknown, secret: string): AgentFailure {
  const outbound = outboundCause(error);
  if (outbound?.code === 'target_not_allowed' || outbound?.code === 'redirect_not_followed') {
    return new AgentFailure('target_not_allowed', scrubbed(outbound.message, secret), false);
  }
  if (isApiError(error) && error.status !== undefined) {
    const message = scrubbed(`the provider answered ${error.status}: ${providerMessage(error)}`, secret);
    if (error.status === 429) {
      return new AgentFailure('upstream_error', message, true, retryAfterMsOf(error.headers));
    }
    return new AgentFailure('upstream_error', message, error.status >= 500 || error.status === 408);
  }
  // No answer at all (timeouts, refused or broken connections), or an error event inside the stream.
  const message =
    outbound?.message ?? (isApiError(error) ? providerMessage(error) : (error as Error).message);
  return new AgentFailure(
    'upstream_error',
    scrubbed(`the provider could not be reached: ${message}`, secret),
    true,
  );
}
