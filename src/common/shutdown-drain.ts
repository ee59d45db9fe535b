import { Global, Injectable, Module } from '@nestjs/common';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * How the API's port closes on a stop (main.ts), in two steps before the app's own shutdown hooks:
 *
 * 1. `drain` (SIGTERM, for SHUTDOWN_DRAIN_MS): the instance goes on serving while `GET /health/ready`
 *    answers 503, so that a load balancer's health checks take it out of rotation, and every answer
 *    closes its connection, so that neither the balancer nor a client keeps one that the closing port
 *    would reset. Without it, a balancer learns of the stop from failed connections.
 * 2. `releaseRequests`, once the port stops accepting: the requests that would otherwise stay open until
 *    their own end (a `?wait=N`, an event stream, an MCP stream) are answered or ended now, so the
 *    in-flight requests the server waits for are the short ones; the usage and audit entries of all of
 *    them are written after, by the app's hooks.
 *
 * The services that hold such requests register how to let them go (`onRelease`).
 */
@Injectable()
export class ShutdownDrain {
  private since?: number;
  private readonly releases = new Set<() => void>();
  private released = false;

  /** Whether the instance is draining: ready no more, though still serving. */
  get draining(): boolean {
    return this.since !== undefined;
  }

  /** Drains `server` for `ms`; resolves when the port may close. */
  async drain(server: Server, ms: number): Promise<void> {
    if (this.since === undefined) {
      this.since = Date.now();
      server.prependListener('request', (_request: IncomingMessage, response: ServerResponse) => {
        if (!response.headersSent) response.setHeader('connection', 'close');
      });
    }
    const left = this.since + ms - Date.now();
    if (left > 0) await sleep(left);
  }

  /** Calls `release` when the port closes (at once if it has). Its callers live as long as the app. */
  onRelease(release: () => void): void {
    if (this.released) release();
    else this.releases.add(release);
  }

  /** The port stopped accepting: the long-lived requests are let go. */
  releaseRequests(): void {
    this.released = true;
    for (const release of [...this.releases]) release();
    this.releases.clear();
  }
}

@Global()
@Module({ providers: [ShutdownDrain], exports: [ShutdownDrain] })
export class ShutdownDrainModule {}
