import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { freeLoopbackPort } from './ports';

/**
 * A PgBouncer of the test's own (Debian's `pgbouncer`, which CI installs), in transaction mode, on a free
 * loopback port in front of the test run's PostgreSQL: every database name is passed through, trust
 * authentication, as the shared server has. It refuses to run as root, so under root it switches to the
 * `postgres` user. `close()` belongs in a `finally`.
 */
export class OwnPgBouncer {
  private constructor(
    readonly port: number,
    private readonly dir: string,
    private readonly process: ChildProcess,
  ) {}

  static async start(serverUrl: string): Promise<OwnPgBouncer> {
    const server = new URL(serverUrl);
    const user = decodeURIComponent(server.username) || 'postgres';
    const port = await freeLoopbackPort();
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-pgbouncer-'));
    chmodSync(dir, 0o777);
    writeFileSync(join(dir, 'users.txt'), `"${user}" ""\n`);
    writeFileSync(
      join(dir, 'pgbouncer.ini'),
      [
        '[databases]',
        `* = host=${server.hostname} port=${server.port || 5432}`,
        '[pgbouncer]',
        'listen_addr = 127.0.0.1',
        `listen_port = ${port}`,
        'unix_socket_dir =',
        'auth_type = trust',
        `auth_file = ${join(dir, 'users.txt')}`,
        `admin_users = ${user}`,
        'pool_mode = transaction',
        'max_client_conn = 1000',
        'default_pool_size = 20',
        // pg sends it at connect; PgBouncer passes through only what it knows.
        'ignore_startup_parameters = extra_float_digits',
        `logfile = ${join(dir, 'pgbouncer.log')}`,
      ].join('\n'),
    );
    const asRoot = process.getuid?.() === 0;
    const child = spawn('pgbouncer', [...(asRoot ? ['-u', 'postgres'] : []), join(dir, 'pgbouncer.ini')], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const bouncer = new OwnPgBouncer(port, dir, child);
    // Up once its admin console answers.
    for (let i = 0; ; i++) {
      if (child.exitCode !== null) throw new Error(`pgbouncer exited (${child.exitCode}): ${stderr}`);
      try {
        await bouncer.admin('SHOW VERSION');
        return bouncer;
      } catch (error) {
        if (i >= 200) throw error;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  }

  /** The URL of `databaseUrl`'s database through this pooler. */
  urlOf(databaseUrl: string): string {
    const url = new URL(databaseUrl);
    url.hostname = '127.0.0.1';
    url.port = String(this.port);
    return url.toString();
  }

  /** A statement on the admin console (SHOW CLIENTS, SHOW POOLS, ...): its rows. */
  async admin(statement: string): Promise<Record<string, unknown>[]> {
    const client = new Client({
      host: '127.0.0.1',
      port: this.port,
      user: 'postgres',
      database: 'pgbouncer',
    });
    await client.connect();
    try {
      // No parameters: pg sends it in the simple protocol, the only one the admin console speaks.
      return (await client.query(statement)).rows;
    } finally {
      await client.end();
    }
  }

  async close(): Promise<void> {
    if (this.process.exitCode === null) {
      this.process.kill('SIGINT');
      await once(this.process, 'exit');
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
