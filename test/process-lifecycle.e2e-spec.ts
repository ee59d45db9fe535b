import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import request from 'supertest';
import { exited } from './support/child-process';
import { PASSWORD, signIn, signUpOrganization, uniqueEmail } from './support/factories';
import { canListSockets, listeningTcpPorts } from './support/listening-sockets';
import { runMain, scratchDataDirs, spawnMain, waitUntilLive } from './support/main-process';
import { freeLoopbackPort } from './support/ports';
import { createTestDatabase, dropTestDatabase, startTestApp, TestApp } from './support/test-app';

/**
 * The service's life as a process: it serves, then exits 0 on SIGTERM; it reads .env; it refuses a second
 * process on an embedded data directory in use; and the embedded database is reachable by its owner only
 * and keeps its data across a restart. Some tests spawn the real entry point (test/support/main-process.ts).
 */

jest.setTimeout(90_000);

describe('the real process', () => {
  const tempDir = scratchDataDirs();

  it('serves, then exits 0 on SIGTERM and stops listening', async () => {
    const port = await freeLoopbackPort();
    const base = `http://127.0.0.1:${port}`;
    const databaseUrl = await createTestDatabase(); // undefined on the embedded run
    const child = spawnMain({
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: tempDir(),
      LOG_LEVEL: 'warn',
      DATABASE_URL: databaseUrl,
      REDIS_URL: process.env.REDIS_URL,
    });
    try {
      await waitUntilLive(child, base);
      await request(base).get('/health/ready').expect(200);

      child.kill('SIGTERM');
      const result = await exited(child, 45_000);
      expect({ timedOut: result.timedOut, code: result.code, signal: result.signal }).toEqual({
        timedOut: false,
        code: 0,
        signal: null,
      });
      await expect(request(base).get('/health/live').timeout(2000)).rejects.toThrow(/ECONNREFUSED/);
    } finally {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await exited(child, 10_000);
      }
      if (databaseUrl) await dropTestDatabase(databaseUrl);
    }
  });

  it('reads .env from its working directory, a variable set in the environment winning', async () => {
    const port = await freeLoopbackPort();
    const workingDirectory = tempDir();
    // PORT comes only from .env; LOG_LEVEL there is invalid, so starting at all shows the environment won.
    writeFileSync(join(workingDirectory, '.env'), `PORT=${port}\nHOST=127.0.0.1\nLOG_LEVEL=nonsense\n`);
    const databaseUrl = await createTestDatabase();
    const child = spawnMain(
      { LOG_LEVEL: 'warn', DATA_DIR: tempDir(), DATABASE_URL: databaseUrl },
      { cwd: workingDirectory },
    );
    try {
      await waitUntilLive(child, `http://127.0.0.1:${port}`);
    } finally {
      child.kill('SIGTERM');
      await exited(child, 45_000);
      if (databaseUrl) await dropTestDatabase(databaseUrl);
    }
  });

  it('refuses a second process on an embedded data directory in use', async () => {
    const first = await startTestApp({ embedded: true });
    try {
      const result = await runMain({
        PORT: String(await freeLoopbackPort()),
        HOST: '127.0.0.1',
        DATA_DIR: first.dataDir,
        LOG_LEVEL: 'warn',
      });
      expect(result.timedOut).toBe(false);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toMatch(/in use/);
      // The first instance is unharmed.
      await first.http.get('/health/ready').expect(200);
    } finally {
      await first.close();
    }
  });
});

describe('embedded database', () => {
  it('is reachable by its owner only: the process listens on its HTTP port alone, the database on an owner-only socket in DATA_DIR', async () => {
    const port = await freeLoopbackPort();
    const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-ops-'));
    const child = spawnMain({ PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'warn' });
    try {
      await waitUntilLive(child, `http://127.0.0.1:${port}`);
      // Anyone on the machine can connect to a loopback port, and PGlite asks for no password.
      if (canListSockets()) expect(listeningTcpPorts(child.pid!)).toEqual([port]);
      else console.warn('not on Linux: the check of listening TCP ports was skipped');

      const socketDir = join(dataDir, 'pglite-socket');
      expect(statSync(socketDir).mode & 0o777).toBe(0o700);
      expect(statSync(join(socketDir, '.s.PGSQL.5432')).mode & 0o777).toBe(0o600);
      // The owner can still look inside, as `psql "postgresql://postgres@/postgres?host=<DATA_DIR>/pglite-socket"` would.
      const owner = new Client({ host: socketDir, user: 'postgres', database: 'postgres' });
      await owner.connect();
      try {
        const { rows } = await owner.query<{ n: string }>('SELECT count(*) AS n FROM users');
        expect(rows).toEqual([{ n: '0' }]);
      } finally {
        await owner.end();
      }
    } finally {
      child.kill('SIGTERM');
      await exited(child, 45_000);
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('keeps its data across a restart on the same data directory', async () => {
    const first = await startTestApp({ embedded: true });
    const dataDir = first.dataDir;
    let firstOpen = true;
    let second: TestApp | undefined;
    try {
      const org = await signUpOrganization(first.http, 'Durable');
      const extraEmail = uniqueEmail('durable');
      const extra = await first.http
        .post('/v1/users')
        .set(org.auth)
        .send({ email: extraEmail, password: PASSWORD, name: 'Durable Dev', role: 'developer' })
        .expect(201);
      await first.close({ keepData: true });
      firstOpen = false;

      second = await startTestApp({ embedded: true, dataDir });
      const token = await signIn(second.http, org.email);
      const auth = { Authorization: `Bearer ${token}` };
      const me = await second.http.get(`/v1/users/${org.userId}`).set(auth).expect(200);
      expect(me.body).toEqual(
        expect.objectContaining({ id: org.userId, email: org.email, role: 'administrator' }),
      );
      const list = await second.http.get('/v1/users').set(auth).expect(200);
      expect(list.body.data.map((u: { id: string }) => u.id).sort()).toEqual(
        [org.userId, extra.body.id].sort(),
      );
      // The other user can sign in too: password hashes survived.
      await signIn(second.http, extraEmail);
      // The signing secret kept under DATA_DIR survived, so a token issued before the restart still works.
      await second.http.get('/v1/users').set(org.auth).expect(200);
    } finally {
      if (firstOpen) await first.close({ keepData: true });
      await second?.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
