import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import calculateSlot from 'cluster-key-slot';
import { freeLoopbackPort } from './ports';

/** A cluster state change is looked for this often, and waited for at most this long. */
const POLL_MS = 50;
const STATE_DEADLINE_MS = 30_000;

interface ClusterNode {
  port: number;
  /** The cluster bus (`cluster-port`), chosen free too rather than left at port + 10000. */
  busPort: number;
  dir: string;
  process?: ChildProcess;
}

/**
 * A Redis Cluster of the test's own: `primaries` primaries, no replicas, on free loopback ports, keeping
 * nothing but each node's cluster configuration (nodes.conf) on disk, so a node stopped and started
 * again rejoins with its slots and no data, as a restarted primary without persistence does. Nodes
 * judge a peer failed after 1 s, and a shard down leaves the others serving
 * (`cluster-require-full-coverage no`). `close()` belongs in a `finally`.
 */
export class OwnRedisCluster {
  private constructor(private readonly nodes: ClusterNode[]) {}

  static async start(primaries = 3): Promise<OwnRedisCluster> {
    const nodes: ClusterNode[] = [];
    for (let i = 0; i < primaries; i++) {
      nodes.push({
        port: await freeLoopbackPort(),
        busPort: await freeLoopbackPort(),
        dir: mkdtempSync(join(tmpdir(), 'gatehouse-redis-cluster-')),
      });
    }
    const cluster = new OwnRedisCluster(nodes);
    try {
      for (let i = 0; i < nodes.length; i++) await cluster.startNode(i);
      const create = spawnSync(
        'redis-cli',
        ['--cluster', 'create', ...nodes.map(({ port }) => `127.0.0.1:${port}`), '--cluster-yes'],
        { encoding: 'utf8' },
      );
      if (create.status !== 0)
        throw new Error(`redis-cli --cluster create failed: ${create.stdout}${create.stderr}`);
      await cluster.untilServing();
    } catch (error) {
      await cluster.close();
      throw error;
    }
    return cluster;
  }

  /** REDIS_CLUSTER_NODES for an app: every node (a client needs only one to find the rest). */
  get nodesSetting(): string {
    return this.nodes.map(({ port }) => `redis://127.0.0.1:${port}`).join(',');
  }

  get size(): number {
    return this.nodes.length;
  }

  /** Which node (its index) serves the hash slot of `key`, as `CLUSTER NODES` says now. */
  nodeOf(key: string): number {
    const slot = calculateSlot(key);
    const index = this.slotRanges().findIndex((ranges) =>
      ranges.some(([from, to]) => slot >= from && slot <= to),
    );
    if (index < 0) throw new Error(`no node serves slot ${slot}`);
    return index;
  }

  /** How many keys node `index` holds (DBSIZE). */
  keysOn(index: number): number {
    return Number(this.cli(index, 'dbsize').trim());
  }

  /** The names of node `index`'s keys that match `pattern` (SCAN). */
  keysMatching(index: number, pattern: string): string[] {
    return this.cli(index, '--scan', '--pattern', pattern).split('\n').filter(Boolean);
  }

  /** Pauses node `index` (SIGSTOP: a hang, its port still accepting connections, nothing answered). */
  pause(index: number): void {
    const child = this.nodes[index].process;
    if (!child || child.exitCode !== null) throw new Error(`cluster node ${index} is not running`);
    child.kill('SIGSTOP');
  }

  /** Resumes node `index` and waits until the cluster serves every slot again. Safe in a `finally`. */
  async resume(index: number): Promise<void> {
    const child = this.nodes[index].process;
    if (!child || child.exitCode !== null) return;
    child.kill('SIGCONT');
    await this.untilServing();
  }

  /** Stops node `index` at once (SIGKILL: a crash, not a shutdown that saves). */
  async stop(index: number): Promise<void> {
    const child = this.nodes[index].process;
    this.nodes[index].process = undefined;
    if (!child || child.exitCode !== null) return;
    // A paused node is resumed first, so nothing is left stopped whatever the test did.
    child.kill('SIGCONT');
    child.kill('SIGKILL');
    await once(child, 'exit');
  }

  /** Starts node `index` again and waits until the cluster serves every slot. */
  async restart(index: number): Promise<void> {
    await this.startNode(index);
    await this.untilServing();
  }

  async close(): Promise<void> {
    for (let i = 0; i < this.nodes.length; i++) await this.stop(i);
    for (const { dir } of this.nodes) rmSync(dir, { recursive: true, force: true });
  }

  private async startNode(index: number): Promise<void> {
    const node = this.nodes[index];
    node.process = spawn(
      'redis-server',
      [
        '--port',
        String(node.port),
        '--bind',
        '127.0.0.1',
        '--dir',
        node.dir,
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        'nodes.conf',
        '--cluster-port',
        String(node.busPort),
        '--cluster-node-timeout',
        '1000',
        '--cluster-require-full-coverage',
        'no',
        '--save',
        '',
        '--appendonly',
        'no',
      ],
      { stdio: 'ignore' },
    );
    for (let i = 0; i < 200; i++) {
      if (this.cli(index, 'ping').trim() === 'PONG') return;
      await sleep(POLL_MS);
    }
    throw new Error(`redis-server (cluster node) on port ${node.port} did not start`);
  }

  /** Until every running node reports the cluster ok and knows an owner for every slot. */
  private async untilServing(): Promise<void> {
    const deadline = Date.now() + STATE_DEADLINE_MS;
    for (;;) {
      const serving = this.nodes.every(
        (_, i) =>
          /cluster_state:ok/.test(this.cli(i, 'cluster', 'info')) &&
          /cluster_slots_ok:16384/.test(this.cli(i, 'cluster', 'info')),
      );
      if (serving) return;
      if (Date.now() > deadline) throw new Error('the Redis Cluster did not come to serve every slot');
      await sleep(POLL_MS);
    }
  }

  /** Each node's slot ranges, in node order. */
  private slotRanges(): [number, number][][] {
    const byPort = new Map<number, [number, number][]>();
    const running = this.nodes.findIndex(({ process }) => process && process.exitCode === null);
    for (const line of this.cli(running, 'cluster', 'nodes').trim().split('\n')) {
      const fields = line.split(' ');
      const port = Number(/:(\d+)@/.exec(fields[1])?.[1]);
      const ranges = fields
        .slice(8)
        .filter((field) => /^\d/.test(field))
        .map((field): [number, number] => {
          const [from, to = from] = field.split('-').map(Number);
          return [from, to];
        });
      byPort.set(port, ranges);
    }
    return this.nodes.map(({ port }) => byPort.get(port) ?? []);
  }

  private cli(index: number, ...command: string[]): string {
    return spawnSync('redis-cli', ['-p', String(this.nodes[index].port), ...command], { encoding: 'utf8' })
      .stdout;
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
