/** An agent's `max_concurrency` (an integer 1..1000 its runner validated), or undefined when it sets none. */
export function maxConcurrencyOf(config: Record<string, unknown> | null | undefined): number | undefined {
  const value = config?.max_concurrency;
  return typeof value === 'number' && Number.isInteger(value) && value >= 1 ? value : undefined;
}

interface Slots {
  active: number;
  cap: number;
  waiting: { resolve: () => void; reject: (error: unknown) => void }[];
}

/**
 * Runs per agent in this process, for agents that cap theirs (`max_concurrency`): at most `cap` at once;
 * a run beyond it waits for a slot of that agent (its lease is renewed meanwhile; an abort ends the wait).
 * The worker claims no more tasks of an agent that is at its cap (`atCap`), so what waits here is only
 * what one claim took before the cap was reached.
 */
export class AgentRunSlots {
  private readonly byAgent = new Map<string, Slots>();

  /** Takes a slot of `agentId` (capped at `cap`, the agent's current setting); resolves to its release. */
  async acquire(agentId: string, cap: number, signal: AbortSignal): Promise<() => void> {
    let slots = this.byAgent.get(agentId);
    if (!slots) {
      slots = { active: 0, cap, waiting: [] };
      this.byAgent.set(agentId, slots);
    }
    slots.cap = cap;
    this.admitWaiting(slots);
    if (slots.active < slots.cap && !slots.waiting.length) slots.active++;
    else await this.wait(slots, signal);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.release(agentId, slots);
    };
  }

  /** The agents with every slot taken: the worker leaves their queued tasks to the queue for now. */
  atCap(): string[] {
    return [...this.byAgent].filter(([, slots]) => slots.active >= slots.cap).map(([agentId]) => agentId);
  }

  private wait(slots: Slots, signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    return new Promise<void>((resolve, reject) => {
      const waiter = {
        resolve: () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        },
        reject,
      };
      const onAbort = (): void => {
        const index = slots.waiting.indexOf(waiter);
        if (index >= 0) slots.waiting.splice(index, 1);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      slots.waiting.push(waiter);
    });
  }

  private release(agentId: string, slots: Slots): void {
    slots.active--;
    this.admitWaiting(slots);
    if (!slots.active && !slots.waiting.length && this.byAgent.get(agentId) === slots) {
      this.byAgent.delete(agentId);
    }
  }

  /** Hands free slots (a run ended, or the cap was raised) to waiting runs, oldest first. */
  private admitWaiting(slots: Slots): void {
    while (slots.active < slots.cap && slots.waiting.length) {
      slots.active++;
      slots.waiting.shift()!.resolve();
    }
  }
}
