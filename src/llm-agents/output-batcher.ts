/** Longest wait before a delta is sent: deltas arriving within it are joined into one event. */
export const JOIN_WINDOW_MS = 50;
// The event cap is 10,000 a task (MAX_TASK_EVENTS); its status changes, progress and usage take some.
// Past SLOW_AFTER output events the window widens, past HOLD_AFTER the rest waits for the end of the run.
const SLOW_AFTER = 6_000;
const SLOW_WINDOW_MS = 1_000;
const HOLD_AFTER = 8_000;
/** An output event holds at most 64 KiB of UTF-8 (the events' own bound). */
const MAX_DELTA_BYTES = 64 * 1024;

/** `text` in pieces of at most `maxBytes` of UTF-8 each, never splitting a character. */
export function splitUtf8(text: string, maxBytes: number): string[] {
  if (Buffer.byteLength(text) <= maxBytes) return [text];
  const pieces: string[] = [];
  let piece = '';
  let size = 0;
  for (const char of text) {
    const bytes = Buffer.byteLength(char);
    if (size + bytes > maxBytes) {
      pieces.push(piece);
      piece = '';
      size = 0;
    }
    piece += char;
    size += bytes;
  }
  if (piece) pieces.push(piece);
  return pieces;
}

/**
 * Turns a stream's text deltas into `output` events in order: a delta waits at most JOIN_WINDOW_MS for
 * the ones arriving after it, so a fast stream costs an event per window rather than per token, and a
 * long run widens the window so that it stays under the task's event cap. Reports are sent one at a
 * time (their order is the output's order); the first refusal is kept and thrown by `finish`.
 */
export class OutputBatcher {
  private pending = '';
  private timer?: NodeJS.Timeout;
  private sent = 0;
  private chain: Promise<void> = Promise.resolve();
  private failure?: unknown;

  constructor(private readonly report: (delta: string) => Promise<unknown>) {}

  add(delta: string): void {
    if (!delta) return;
    this.pending += delta;
    if (this.timer || this.sent >= HOLD_AFTER) return;
    this.timer = setTimeout(() => this.flush(), this.sent >= SLOW_AFTER ? SLOW_WINDOW_MS : JOIN_WINDOW_MS);
  }

  /** Sends what is pending, waits for every report, and throws the first that failed. */
  async finish(): Promise<void> {
    this.flush();
    await this.chain;
    if (this.failure !== undefined) throw this.failure;
  }

  /** Drops what is pending (the run failed or was aborted). */
  discard(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.pending = '';
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.pending) return;
    const pieces = splitUtf8(this.pending, MAX_DELTA_BYTES);
    this.pending = '';
    this.sent += pieces.length;
    for (const piece of pieces) {
      this.chain = this.chain.then(async () => {
        if (this.failure !== undefined) return;
        try {
          await this.report(piece);
        } catch (error) {
          this.failure = error;
        }
      });
    }
  }
}
