import { cpSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Client } from 'pg';
import { EmbeddedPostgres } from '../../src/database/embedded-postgres';
import { canListSockets, listeningTcpPorts } from '../support/listening-sockets';

async function selectOne(url: string): Promise<number> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ one: number }>('SELECT 1 AS one');
    return rows[0].one;
  } finally {
    await client.end();
  }
}

function modeOf(path: string): number {
  return statSync(path).mode & 0o777;
}

/**
 * The embedded database is reachable by this process's user only: no TCP listener (anyone on the machine
 * can connect to loopback, and PGlite asks for no password), a Unix socket in a directory only the owner
 * may enter instead.
 */
describe('embedded PostgreSQL (PGlite) endpoint', () => {
  const dirs: string[] = [];
  const emptyDir = (): string => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-embedded-'));
    dirs.push(dir);
    return dir;
  };
  // PGlite's first start in an empty directory runs initdb (seconds): each test starts from a copy of one.
  let seed: string;
  beforeAll(async () => {
    seed = emptyDir();
    await (await EmbeddedPostgres.start(seed, 1)).stop();
  });
  const withDatabase = (dataDir: string): string => {
    cpSync(join(seed, 'pglite'), join(dataDir, 'pglite'), { recursive: true });
    return dataDir;
  };
  const tempDir = (): string => withDatabase(emptyDir());
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('opens no TCP port: the URL names a Unix socket, in a directory only the owner may enter', async () => {
    const before = canListSockets() ? listeningTcpPorts() : [];
    const db = await EmbeddedPostgres.start(tempDir(), 3);
    try {
      if (canListSockets()) expect(listeningTcpPorts()).toEqual(before);
      else console.warn('not on Linux: the check of listening TCP ports was skipped');

      // What `pg` makes of the URL: a socket directory (a host starting with "/"), not a TCP address.
      const { host, port } = new Client({ connectionString: db.url });
      expect(host).toMatch(/^\//);
      expect(port).toBe(5432);
      expect(db.socketPath).toBe(join(host, '.s.PGSQL.5432'));
      const socket = statSync(db.socketPath);
      expect(socket.isSocket()).toBe(true);
      expect(socket.uid).toBe(process.getuid!());
      expect(modeOf(db.socketPath)).toBe(0o600);
      expect(modeOf(host)).toBe(0o700);

      // Its owner reaches it with the URL, as the app and `psql "<url>"` do.
      expect(await selectOne(db.url)).toBe(1);
    } finally {
      await db.stop();
    }
  });

  it('a DATA_DIR that cannot hold a socket: the same private fallback, saying why', async () => {
    const dataDir = tempDir();
    // Where the socket's directory belongs, a file: as unusable for a socket as a bind mount without sockets.
    writeFileSync(join(dataDir, 'pglite-socket'), '');
    await expectPrivateFallback(dataDir, /^DATA_DIR cannot hold a Unix socket \(.+\)$/);
  });

  it('uses the socket directory under DATA_DIR, tightening one left with a looser mode', async () => {
    const dataDir = tempDir();
    mkdirSync(join(dataDir, 'pglite-socket'), { mode: 0o755 });
    const db = await EmbeddedPostgres.start(dataDir, 3);
    try {
      expect(dirname(db.socketPath)).toBe(join(dataDir, 'pglite-socket'));
      expect(db.socketOutsideDataDirBecause).toBeUndefined();
      expect(modeOf(dirname(db.socketPath))).toBe(0o700);
      expect(await selectOne(db.url)).toBe(1);
    } finally {
      await db.stop();
    }
  });

  it('starts over a socket file left by a process that died', async () => {
    const dataDir = tempDir();
    mkdirSync(join(dataDir, 'pglite-socket'), { mode: 0o700 });
    writeFileSync(join(dataDir, 'pglite-socket', '.s.PGSQL.5432'), '');
    const db = await EmbeddedPostgres.start(dataDir, 3);
    try {
      expect(await selectOne(db.url)).toBe(1);
    } finally {
      await db.stop();
    }
  });

  it('a DATA_DIR too long for a socket path: a private directory of its own under the temp dir, removed at stop', async () => {
    const dataDir = join(
      emptyDir(),
      'a-data-directory-whose-path-is-longer-than-a-unix-socket-path-may-be'.repeat(2),
    );
    mkdirSync(dataDir);
    withDatabase(dataDir);
    await expectPrivateFallback(dataDir, /^DATA_DIR is too long a path for a Unix socket/);
  });
});

/**
 * A DATA_DIR unfit for the socket: the database listens in a private directory of its own outside it
 * (owner-only, removed at stop), and says why.
 */
async function expectPrivateFallback(dataDir: string, why: RegExp): Promise<void> {
  const db = await EmbeddedPostgres.start(dataDir, 3);
  const socketDir = dirname(db.socketPath);
  try {
    expect(db.socketOutsideDataDirBecause).toMatch(why);
    expect(Buffer.byteLength(db.socketPath)).toBeLessThanOrEqual(107);
    expect(socketDir.startsWith(join(dataDir, ''))).toBe(false);
    expect(modeOf(socketDir)).toBe(0o700);
    expect(modeOf(db.socketPath)).toBe(0o600);
    expect(await selectOne(db.url)).toBe(1);
  } finally {
    await db.stop();
  }
  expect(() => statSync(socketDir)).toThrow(/ENOENT/);
}
