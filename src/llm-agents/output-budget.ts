import type { AgentTask } from '../agents/agent-runner';

// Tokens a request's framing (roles, separators) adds beyond its text.
const FRAMING_TOKENS = 16;
// Tokenizers make a token of about 4 bytes of English, fewer of code or non-Latin scripts; a token
// every 2 bytes overestimates nearly any input, so the cap it gives keeps the run within its reservation.
const BYTES_PER_TOKEN = 2;

/** The input tokens a request is taken to cost before the provider counts them: on the high side. */
export function estimatedInputTokens(system: string | undefined, user: string): number {
  return (
    Math.ceil((Buffer.byteLength(system ?? '') + Buffer.byteLength(user)) / BYTES_PER_TOKEN) + FRAMING_TOKENS
  );
}

/**
 * The output tokens the task's reservation can still pay once its input is paid (CONTRACT, "Model
 * agents"): `floor((max_credits − estimated input cost) × 1000 / output price)`; undefined when output
 * is free (nothing to cap).
 */
export function outputTokenCap(
  task: AgentTask,
  system: string | undefined,
  user: string,
): number | undefined {
  const outputPrice = task.pricing?.credits_per_1k_output_tokens ?? 0;
  if (!(outputPrice > 0)) return undefined;
  const inputCost =
    (estimatedInputTokens(system, user) / 1000) * (task.pricing?.credits_per_1k_input_tokens ?? 0);
  // Floating point must not take a token off an exact quotient (costOf allows the same hair).
  return Math.floor((((task.maxCredits ?? 0) - inputCost) * 1000) / outputPrice + 1e-9);
}
