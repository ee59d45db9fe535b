import Redis, { Cluster } from 'ioredis';
import calculateSlot from 'cluster-key-slot';

/**
 * Which Redis server holds a key, as the run id it has had since it last started (INFO's `run_id`):
 * the credit ledger seeds and spends a balance only on the run it seeded it on, so that a server that
 * restarted (and lost, restored or replayed writes) is never spent from as if nothing happened
 * (redis-credit-ledger.ts). On one Redis that is the one server; on a cluster, the primary serving the
 * key's hash slot. Every run read is forgotten, and `onChange` listeners told, whenever a connection
 * closes or a node leaves: the next look asks again, and a failover's new primary is a new run.
 */
export class ServerRuns {
  /** By node (`host:port`; '' for one Redis): its run id, asked once per connection. */
  private readonly runs = new Map<string, Promise<string>>();
  private readonly listeners: (() => void)[] = [];

  constructor(private readonly client: Redis | Cluster) {
    const changed = () => this.changed();
    client.on('close', changed);
    if (client instanceof Cluster) {
      client.on('+node', (node: Redis) => node.on('close', changed));
      client.on('-node', changed);
    }
  }

  /** Called whenever a run read before may no longer be the server's (a connection closed). */
  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** The run id of the server that holds `key` (as the caller names it: before REDIS_KEY_PREFIX). */
  of(key: string): Promise<string> {
    const node = this.serverOf(key);
    if (typeof node === 'string') return Promise.reject(new Error(node));
    const [name, server] = node;
    // INFO is let through while a reconnect waits for its ready check: it would wait out the deadline.
    if (server.status !== 'ready') return Promise.reject(new Error(`Redis is ${server.status}`));
    let run = this.runs.get(name);
    if (!run) {
      const asked = server.info('server').then((info) => {
        const id = /^run_id:(\w+)/m.exec(info)?.[1];
        if (!id) throw new Error('Redis INFO answered no run_id');
        return id;
      });
      run = asked;
      this.runs.set(name, asked);
      asked.catch(() => {
        if (this.runs.get(name) === asked) this.runs.delete(name);
      });
    }
    return run;
  }

  /** The server answering for `key` and its name, or why there is none now. */
  private serverOf(key: string): [string, Redis] | string {
    const client = this.client;
    if (!(client instanceof Cluster)) return ['', client];
    const slot = calculateSlot(`${client.options.keyPrefix ?? ''}${key}`);
    const name = client.slots[slot]?.[0];
    if (!name) return `no node serves hash slot ${slot} yet`;
    const server = client.nodes('master').find(({ options }) => `${options.host}:${options.port}` === name);
    return server ? [name, server] : `the node serving hash slot ${slot} (${name}) is not connected`;
  }

  private changed(): void {
    this.runs.clear();
    for (const listener of this.listeners) listener();
  }
}
