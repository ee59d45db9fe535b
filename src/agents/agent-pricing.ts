/**
 * An agent's prices, in credits per 1,000 tokens its runs report (CONTRACT, "Costs"). A task keeps the
 * prices its agent had when it was created (src/tasks/task-costs.ts).
 */
export interface AgentPricing {
  credits_per_1k_input_tokens: number;
  credits_per_1k_output_tokens: number;
}

/** An agent without pricing, and every built-in one (`echo` is free). */
export const FREE: AgentPricing = Object.freeze({
  credits_per_1k_input_tokens: 0,
  credits_per_1k_output_tokens: 0,
});
