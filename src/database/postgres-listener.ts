import { Logger } from '@nestjs/common';
import { Client } from 'pg';

const RECONNECT_MS = 1000;

export interface ListenerEvents {
  onMessage(payload: string): void;
  /** Whether the listener hears the channel now: false when its connection drops, true once back. */
  onHearing?(hearing: boolean): void;
}

/**
 * A dedicated connection that LISTENs on one PostgreSQL channel and reconnects every second after it
 * drops (the database restarted, say). Messages sent while it is away are lost; `onHearing` says so.
 */
export class PostgresListener {
  private client?: Client;
  private stopped = false;

  constructor(
    private readonly url: string,
    private readonly channel: string,
    private readonly events: ListenerEvents,
    private readonly logger: Logger,
  ) {}

  /** Connects and listens; the first connection's failure is the caller's to handle. */
  start(): Promise<void> {
    return this.connect(false);
  }

  private async connect(reconnecting: boolean): Promise<void> {
    const client = new Client({ connectionString: this.url, application_name: `gatehouse-${this.channel}` });
    client.on(
      'notification',
      (message) => message.payload !== undefined && this.events.onMessage(message.payload),
    );
    client.on('error', (error) => {
      this.logger.warn(`listener on ${this.channel}: ${error.message}`);
      this.dropped(client);
    });
    client.on('end', () => this.dropped(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${this.channel}`);
      this.client = client;
      this.events.onHearing?.(true);
    } catch (error) {
      if (!reconnecting) throw error;
      // Not yet the listener, so `dropped` would ignore it: retry from here.
      void discardConnection(client);
      this.retryLater();
    }
  }

  private dropped(client: Client): void {
    if (this.stopped || this.client !== client) return;
    this.client = undefined;
    this.events.onHearing?.(false);
    void discardConnection(client);
    this.retryLater();
  }

  private retryLater(): void {
    if (!this.stopped) setTimeout(() => void this.connect(true), RECONNECT_MS).unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const client = this.client;
    this.client = undefined;
    if (client) {
      await discardConnection(client);
    }
  }
}

/**
 * Ends a connection the listener no longer uses: its listeners go, so nothing it says is reported any
 * more, but one that swallows errors stays. A server shutting down sends every connection a FATAL
 * (57P01, "terminating connection due to administrator command") that pg emits as 'error' when no query
 * is running, and an 'error' with no listener would crash the process (seen once in the PostgreSQL
 * outage suite).
 */
export function discardConnection(client: Client): Promise<void> {
  client.removeAllListeners();
  client.on('error', () => undefined);
  return client.end().catch(() => undefined);
}
