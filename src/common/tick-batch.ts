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
      if (!this.pending.length) setImmediate(() => void this.flush());
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
