/**
 * Calls that arrive in the same turn of the event loop are written together: under load one statement
 * (and one commit) carries many of them; alone, a call waits no longer than a setImmediate. `write`
 * answers one result per item, in order (an ItemFailure fails that call alone); if it throws, every call
 * of that batch fails with the error (a batch holds only statements that fail together: the database
 * being unavailable, say).
 *
 * `maxInFlight` bounds the batches being written at once: while that many are, later calls gather into
 * the next batch, which is written as soon as one finishes (group commit). Calls that come in over many
 * turns (a wave of model runs ending over 50 ms) then share a few statements instead of taking one each,
 * and the connections they would have queued for stay free for the rest; alone, a call still waits no
 * longer than a setImmediate.
 */
/** A result of `write` that fails its own call alone (the others of the batch get theirs). */
export class ItemFailure {
  constructor(readonly error: unknown) {}
}

export class TickBatch<Item, Result> {
  private pending: { item: Item; resolve: (result: Result) => void; reject: (error: unknown) => void }[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly write: (items: Item[]) => Promise<(Result | ItemFailure)[]>,
    private readonly maxInFlight = Infinity,
  ) {}

  add(item: Item): Promise<Result> {
    return new Promise<Result>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || !this.pending.length || this.inFlight >= this.maxInFlight) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    if (this.inFlight >= this.maxInFlight || !this.pending.length) return;
    const batch = this.pending;
    this.pending = [];
    this.inFlight++;
    try {
      const results = await this.write(batch.map((entry) => entry.item));
      batch.forEach((entry, i) => {
        const result = results[i];
        if (result instanceof ItemFailure) entry.reject(result.error);
        else entry.resolve(result);
      });
    } catch (error) {
      for (const entry of batch) entry.reject(error);
    } finally {
      this.inFlight--;
      this.schedule();
    }
  }
}
