import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

/**
 * PostgreSQL without a server: PGlite (Postgres compiled to WASM) persisted under DATA_DIR, exposed on a
 * loopback port through pglite-socket so the app keeps talking to it with `pg` and the same migrations.
 * pglite-socket multiplexes client connections onto PGlite's single session message by message and
 * keeps a connection's messages together only inside an explicit transaction: another connection's
 * messages can run between a query's Parse and its Bind and replace the unnamed prepared statement
 * (errors, or rows of the wrong query). So the app talks to it through a pool of one connection.
 */
export class EmbeddedPostgres {
  private constructor(
    private readonly db: PGlite,
    private readonly server: PGLiteSocketServer,
    private readonly lockFile: string,
    readonly url: string,
  ) {}

  static async start(dataDir: string, maxConnections: number): Promise<EmbeddedPostgres> {
    const directory = join(dataDir, 'pglite');
    mkdirSync(directory, { recursive: true });
    const lockFile = join(dataDir, 'pglite.lock');
    acquireLock(lockFile);
    try {
      const db = await PGlite.create(directory);
      const port = await freeLoopbackPort();
      const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port, maxConnections });
      await server.start();
      return new EmbeddedPostgres(db, server, lockFile, `postgresql://postgres@127.0.0.1:${port}/postgres`);
    } catch (error) {
      rmSync(lockFile, { force: true });
      throw error;
    }
  }

  async stop(): Promise<void> {
    await this.server.stop();
    await this.db.close();
    rmSync(this.lockFile, { force: true });
  }
}

/** Two processes on one PGlite directory would corrupt it; refuse the second one clearly. */
function acquireLock(lockFile: string): void {
  try {
    const pid = Number(readFileSync(lockFile, 'utf8'));
    if (pid && pid !== process.pid && isAlive(pid)) {
      throw new Error(
        `The embedded database in ${lockFile.replace(/pglite\.lock$/, '')} is in use by process ${pid}`,
      );
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  writeFileSync(lockFile, String(process.pid));
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.unref();
    probe.on('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}
