/**
 * An agent's prices, in credits per 1,000 tokens its runs report (CONTRACT, "Costs"). A task keeps the
 * prices its agent had when it was created (src/tasks/task-costs.ts).
 */
export interface AgentPricing {
  credits_per_1k_input_tokens: number;
  credits_per_1k_output_tokens: number;
}

// Prices and reservations far beyond any real run, but exact as doubles and within an integer column
// (agents.default_max_credits). POST /v1/agents and built-in agents (AgentRunners.register) hold to them.
export const MAX_PRICE = 1_000_000;
export const MAX_CREDITS = 1_000_000_000;

/** An agent without pricing (`echo`, and a built-in agent that declares none, are free). */
export const FREE: AgentPricing = Object.freeze({
  credits_per_1k_input_tokens: 0,
  credits_per_1k_output_tokens: 0,
});
