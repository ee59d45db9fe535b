import type { Task } from './task.entity';

/** `ceil(input/1000 × in + output/1000 × out)`: what reported usage costs at a task's pricing. */
export function costOf(
  task: Pick<Task, 'inputTokens' | 'outputTokens' | 'creditsPer1kInputTokens' | 'creditsPer1kOutputTokens'>,
): number {
  const exact =
    (task.inputTokens / 1000) * task.creditsPer1kInputTokens +
    (task.outputTokens / 1000) * task.creditsPer1kOutputTokens;
  // Floating point must not charge a credit for nothing: 0.1 + 0.2 is not above 0.3 here.
  return Math.ceil(exact - 1e-9);
}

/** A task's `usage.credits`: what it was charged once settled, else what its usage costs so far. */
export function creditsOf(task: Task): number {
  return (
    task.creditsCharged ?? Math.min(costOf(task), task.maxCredits === 0 ? costOf(task) : task.maxCredits)
  );
}

/** The error of a run whose reported usage passed its reservation. */
export const BUDGET_EXCEEDED = {
  code: 'budget_exceeded',
  message: "The run's reported usage costs more than the credits reserved for it (max_credits).",
} as const;
