import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { freeLoopbackPort } from './ports';
import { withServer } from './test-database';

const VERSIONS_DIR = '/usr/lib/postgresql';

function run(command: string, args: string[]): void {
  const result = spawnSync(command, args, { encoding: 'utf8' });
  if (result.status !== 0) {
    throw new Error(
      `${command} ${args.join(' ')} failed (${result.status}): ${result.stderr || result.stdout}`,
    );
  }
}

/** The installed PostgreSQL major version (Debian layout), or undefined without one. */
function installedVersion(): string | undefined {
  if (!existsSync(VERSIONS_DIR)) return undefined;
  return readdirSync(VERSIONS_DIR).sort().pop();
}

/**
 * A PostgreSQL cluster of the test's own (pg_createcluster, trust auth, a free loopback port), never
 * the shared one, so a fault test may stop and start it. `close()` drops it and belongs in `finally`.
 */
export class OwnPostgres {
  private constructor(
    private readonly version: string,
    private readonly name: string,
    readonly port: number,
  ) {}

  static async create(): Promise<OwnPostgres> {
    const version = installedVersion();
    if (!version) throw new Error('no PostgreSQL installation under /usr/lib/postgresql');
    const cluster = new OwnPostgres(
      version,
      `gh_faults_${process.pid}_${Date.now()}`,
      await freeLoopbackPort(),
    );
    run('pg_createcluster', [
      version,
      cluster.name,
      '-p',
      String(cluster.port),
      '--',
      '--auth=trust',
      '--no-sync',
    ]);
    try {
      await cluster.start();
    } catch (error) {
      await cluster.close();
      throw error;
    }
    return cluster;
  }

  /** The URL of a new database on this cluster (its name says `test`, as the test support requires). */
  async createDatabase(): Promise<string> {
    const name = `test_faults_${Date.now()}`;
    await withServer(this.url('postgres'), (client) => client.query(`CREATE DATABASE "${name}"`));
    return this.url(name);
  }

  url(database: string): string {
    return `postgresql://postgres@127.0.0.1:${this.port}/${database}`;
  }

  async start(): Promise<void> {
    run('pg_ctlcluster', ['--skip-systemctl-redirect', this.version, this.name, 'start']);
    for (let i = 0; i < 100; i++) {
      const ready = spawnSync('pg_isready', ['-q', '-h', '127.0.0.1', '-p', String(this.port)]);
      if (ready.status === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`PostgreSQL cluster ${this.name} did not accept connections`);
  }

  /** A fast shutdown: open connections are terminated, as when an operator restarts the database. */
  stop(): void {
    run('pg_ctlcluster', ['--skip-systemctl-redirect', this.version, this.name, 'stop', '-m', 'fast']);
  }

  async close(): Promise<void> {
    spawnSync('pg_dropcluster', ['--stop', this.version, this.name], { encoding: 'utf8' });
  }
}

/** Whether this machine can create clusters of its own (Debian's postgresql-common, run as root). */
export const canCreateClusters = (): boolean =>
  installedVersion() !== undefined && spawnSync('sh', ['-c', 'command -v pg_createcluster']).status === 0;
