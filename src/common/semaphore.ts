/**
 * At most `size` holders at once; the rest wait in arrival order. `use` takes a slot for the length of
 * one call and gives it back however the call ends.
 */
export class Semaphore {
  private held = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new Error(`a semaphore needs at least one slot (${size})`);
  }

  async use<T>(call: () => Promise<T>): Promise<T> {
    await this.acquire();
    try {
      return await call();
    } finally {
      this.release();
    }
  }

  private acquire(): Promise<void> {
    if (this.held < this.size) {
      this.held++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  private release(): void {
    const next = this.waiting.shift();
    // The slot passes straight to the next waiter: `held` stays the same.
    if (next) next();
    else this.held--;
  }
}
