let endOfTurn: (() => void)[] = [];

/**
 * Runs `task` at the end of this turn of the event loop (a setImmediate), together with every other task
 * deferred in the same turn, in the order they were deferred. The batches of one turn (TickBatch, the
 * Redis rate-limit windows) all flush in that one callback, so the commands they send leave in the same
 * tick: the Redis client's auto-pipelining writes them as one pipeline, and a request that waits on
 * several of them (its windows and its credits) waits one round trip.
 */
export function atEndOfTurn(task: () => void): void {
  if (!endOfTurn.length) setImmediate(runEndOfTurn);
  endOfTurn.push(task);
}

function runEndOfTurn(): void {
  const tasks = endOfTurn;
  endOfTurn = [];
  for (const task of tasks) {
    try {
      task();
    } catch (error) {
      // Thrown as its own setImmediate would have thrown it, without keeping the others from running.
      process.nextTick(() => {
        throw error;
      });
    }
  }
}

/**
 * Calls that arrive in the same turn of the event loop are written together: under load one statement
 * (and one commit) carries many of them; alone, a call waits no longer than a setImmediate. `write`
 * answers one result per item, in order; if it throws, every call of that batch fails with the error
 * (a batch holds only statements that fail together: the database being unavailable, say).
 */
export class TickBatch<Item, Result> {
  private pending: { item: Item; resolve: (result: Result) => void; reject: (error: unknown) => void }[] = [];

  constructor(private readonly write: (items: Item[]) => Promise<Result[]>) {}

  add(item: Item): Promise<Result> {
    return new Promise<Result>((resolve, reject) => {
      if (!this.pending.length) atEndOfTurn(() => void this.flush());
      this.pending.push({ item, resolve, reject });
    });
  }

  private async flush(): Promise<void> {
    const batch = this.pending;
    this.pending = [];
    try {
      const results = await this.write(batch.map((entry) => entry.item));
      batch.forEach((entry, i) => entry.resolve(results[i]));
    } catch (error) {
      for (const entry of batch) entry.reject(error);
    }
  }
}
