/**
 * SIGTERM and SIGINT for an entry point (main.ts, worker.ts), heard from the moment this is made, before
 * the app is built and long before the port opens. A signal with no listener ends a Node process at once
 * (exit 143), so one that came while the service started (the port just open, the start banner's query
 * under way) used to kill it with the usage and audit entries of the requests it had answered still in
 * memory. Nest's own shutdown hooks re-raise the signal and exit 143 as well, so the sequence is ours:
 * the entry point hands over how it closes (`closeWith`), a signal runs that once and exits 0; a signal
 * that came before the hand-over runs it as soon as it is handed over. The grace period counts from the
 * signal, as the orchestrator's does; past it the process exits 1. A second signal, while the first is
 * being handled, ends the process at once (the default action): a second Ctrl-C does what one expects.
 */
export class StopSignals {
  private signal?: NodeJS.Signals;
  private close?: (signal: NodeJS.Signals) => Promise<void>;
  private stopping = false;

  constructor(private readonly graceMs: number) {
    process.once('SIGTERM', () => this.received('SIGTERM'));
    process.once('SIGINT', () => this.received('SIGINT'));
  }

  /** Whether a stop was asked for: a start still under way goes no further. */
  get requested(): boolean {
    return this.signal !== undefined;
  }

  /** How the process closes on a stop signal (then it exits 0); run now if one came already. */
  closeWith(close: (signal: NodeJS.Signals) => Promise<void>): void {
    this.close = close;
    if (this.signal) void this.stop();
  }

  private received(signal: NodeJS.Signals): void {
    this.signal = signal;
    const deadline = setTimeout(() => {
      console.error(`shutdown after ${signal} took longer than ${this.graceMs} ms; exiting`);
      process.exit(1);
    }, this.graceMs);
    deadline.unref();
    if (this.close) void this.stop();
  }

  private async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    try {
      await this.close!(this.signal!);
    } catch (error) {
      console.error(`shutdown after ${this.signal} failed:`, error);
      process.exit(1);
    }
    process.exit(0);
  }
}
