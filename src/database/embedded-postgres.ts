import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * PostgreSQL without a server: PGlite (Postgres compiled to WASM) persisted under DATA_DIR, exposed on a
 * Unix socket through pglite-socket so the app keeps talking to it with `pg` and the same migrations.
 * pglite-socket multiplexes client connections onto PGlite's single session message by message and
 * keeps a connection's messages together only inside an explicit transaction: another connection's
 * messages can run between a query's Parse and its Bind and replace the unnamed prepared statement
 * (errors, or rows of the wrong query). So the app talks to it through a pool of one connection.
 *
 * Never a TCP port: PGlite asks for no password, and anyone on the machine can connect to loopback. The
 * socket sits in a directory only the owner may enter (0700), and is itself 0600, so only this user (and
 * root) can reach it: `psql "<url>"` as the same user works, for inspecting the data.
 */
export class EmbeddedPostgres {
  private constructor(
    private readonly db: PGlite,
    private readonly server: PGLiteSocketServer,
    private readonly lockFile: string,
    private readonly socket: SocketLocation,
  ) {}

  /** libpq's form for a socket, which `pg` and `psql` read: the directory in `host=`, no host in the authority. */
  get url(): string {
    return `postgresql://postgres@/postgres?host=${encodeURIComponent(this.socket.directory)}`;
  }

  get socketPath(): string {
    return join(this.socket.directory, SOCKET_NAME);
  }

  /** Why the socket is not in DATA_DIR but in a private directory under the temp dir; undefined when it is. */
  get socketOutsideDataDirBecause(): string | undefined {
    return this.socket.outsideDataDirBecause;
  }

  static async start(dataDir: string, maxConnections: number): Promise<EmbeddedPostgres> {
    const directory = join(dataDir, 'pglite');
    mkdirSync(directory, { recursive: true });
    const lockFile = join(dataDir, 'pglite.lock');
    acquireLock(lockFile);
    let db: PGlite | undefined;
    try {
      db = await PGlite.create(directory);
      const { server, socket } = await listenPrivately(db, dataDir, maxConnections);
      return new EmbeddedPostgres(db, server, lockFile, socket);
    } catch (error) {
      await db?.close();
      rmSync(lockFile, { force: true });
      throw error;
    }
  }

  async stop(): Promise<void> {
    await this.server.stop();
    await this.db.close();
    if (this.socket.outsideDataDirBecause) rmSync(this.socket.directory, { recursive: true, force: true });
    rmSync(this.lockFile, { force: true });
  }
}

/** `pg` and libpq look for `<host>/.s.PGSQL.<port>`; the default port keeps the URL free of one. */
const SOCKET_NAME = '.s.PGSQL.5432';

/** A socket's path must fit `sun_path` (108 bytes on Linux, 104 on macOS, with its terminating NUL). */
const MAX_SOCKET_PATH_BYTES = process.platform === 'linux' ? 107 : 103;

interface SocketLocation {
  directory: string;
  /** Set when the directory is a temporary one (removed at stop), saying why DATA_DIR could not hold it. */
  outsideDataDirBecause?: string;
}

/**
 * Listens in `<DATA_DIR>/pglite-socket` (mode 0700). When DATA_DIR cannot hold the socket (a path too long
 * for one; a file system without sockets, as some bind mounts are), in a fresh directory under the temp dir
 * instead (`mkdtemp` makes it 0700), so the service still starts, and says why.
 */
async function listenPrivately(
  db: PGlite,
  dataDir: string,
  maxConnections: number,
): Promise<{ server: PGLiteSocketServer; socket: SocketLocation }> {
  const inDataDir = join(resolve(dataDir), 'pglite-socket');
  let reason = `is too long a path for a Unix socket (at most ${MAX_SOCKET_PATH_BYTES} bytes)`;
  if (fitsSocketPath(inDataDir)) {
    try {
      mkdirSync(inDataDir, { recursive: true, mode: 0o700 });
      // mkdir leaves an existing directory as it was, and applies the umask to a new one.
      chmodSync(inDataDir, 0o700);
      return { server: await listenOn(db, inDataDir, maxConnections), socket: { directory: inDataDir } };
    } catch (error) {
      reason = `cannot hold a Unix socket (${(error as Error).message})`;
    }
  }
  const temporary = mkdtempSync(join(tmpdir(), 'gatehouse-pg-'));
  try {
    if (!fitsSocketPath(temporary)) {
      throw new Error(
        `DATA_DIR (${resolve(dataDir)}) ${reason}, and so is the temp dir (${tmpdir()}): ` +
          'set a shorter DATA_DIR or TMPDIR for the embedded database',
      );
    }
    const server = await listenOn(db, temporary, maxConnections);
    return { server, socket: { directory: temporary, outsideDataDirBecause: `DATA_DIR ${reason}` } };
  } catch (error) {
    rmSync(temporary, { recursive: true, force: true });
    throw error;
  }
}

/** The socket server on `<directory>/.s.PGSQL.5432`, the socket file readable and writable by its owner only. */
async function listenOn(db: PGlite, directory: string, maxConnections: number): Promise<PGLiteSocketServer> {
  const path = join(directory, SOCKET_NAME);
  // Holding the lock, a socket file here can only be one a process that died left behind.
  rmSync(path, { force: true });
  const server = new PGLiteSocketServer({ db, path, maxConnections });
  try {
    await server.start();
    chmodSync(path, 0o600);
    return server;
  } catch (error) {
    await server.stop();
    throw error;
  }
}

function fitsSocketPath(directory: string): boolean {
  return Buffer.byteLength(join(directory, SOCKET_NAME)) <= MAX_SOCKET_PATH_BYTES;
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
