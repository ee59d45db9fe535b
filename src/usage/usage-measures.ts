/**
 * What key_usage_hourly counts besides requests (CONTRACT, "Usage buckets"): its `outcome` column holds
 * a request's outcome (`allowed` or a refusal's code), or one of these measures, which start with `$`
 * so no refusal code can take their name. Requests are the rows that are not measures.
 */
export const USAGE_MEASURES = {
  /** Tasks of the key that ended in the hour. */
  tasks: '$tasks',
  inputTokens: '$input_tokens',
  outputTokens: '$output_tokens',
  /** Credits taken from the key's balance: one per request that spent one, and what each run cost. */
  creditsSpent: '$credits_spent',
} as const;

export function isMeasure(outcome: string): boolean {
  return outcome.startsWith('$');
}

/**
 * What a task that ended adds to its creating key's usage in that hour (under the identity the key has
 * then, which TaskRunMeter reads from the keys module in the same transaction).
 */
export interface TaskRunUsage {
  organizationId: string;
  keyId: string;
  inputTokens: number;
  outputTokens: number;
  /** What the run took from the key's balance (0 when nothing was reserved). */
  creditsSpent: number;
}
