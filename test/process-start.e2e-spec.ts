import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CapturedChild, exited } from './support/child-process';
import { logEntriesOf, ProcessResult, runMain, scratchDataDirs, spawnMain } from './support/main-process';
import { freeLoopbackPort } from './support/ports';
import { createTestDatabase, dropTestDatabase, instanceDatabaseEnv } from './support/test-app';
import { packageVersion } from '../src/common/package-version';

/**
 * Starting the service: the real entry point refuses invalid configuration, and a first start explains
 * itself (one-line errors, the banner, the bootstrap settings). Every test spawns the real entry point
 * (test/support/main-process.ts).
 */

describe('the real process', () => {
  const tempDir = scratchDataDirs();

  describe('refuses to start with invalid configuration', () => {
    it('PORT that is not a port', async () => {
      const result = await runMain({ PORT: 'not-a-port', DATA_DIR: tempDir(), LOG_LEVEL: 'warn' });
      expect(result.timedOut).toBe(false);
      expect(result.code).not.toBe(0);
      expect(result.code).not.toBeNull();
      expect(result.stderr).toMatch(/\bPORT\b/);
    });

    it('NODE_ENV=production without secrets, naming each', async () => {
      const result = await runMain({
        NODE_ENV: 'production',
        PORT: String(await freeLoopbackPort()),
        DATA_DIR: tempDir(),
        LOG_LEVEL: 'warn',
      });
      expect(result.timedOut).toBe(false);
      expect(result.code).not.toBe(0);
      expect(result.code).not.toBeNull();
      expect(result.stderr).toContain('TOKEN_SIGNING_SECRET');
      expect(result.stderr).toContain('API_KEY_HASH_SECRET');
      expect(result.stderr).toContain('AUDIT_CHAIN_SECRET');
    });

    it('a placeholder TOKEN_SIGNING_SECRET in production, naming only that variable', async () => {
      const result = await runMain({
        NODE_ENV: 'production',
        PORT: String(await freeLoopbackPort()),
        DATA_DIR: tempDir(),
        LOG_LEVEL: 'warn',
        TOKEN_SIGNING_SECRET: 'change-me-change-me-change-me-1234',
        API_KEY_HASH_SECRET: randomBytes(32).toString('base64url'),
        AUDIT_CHAIN_SECRET: randomBytes(32).toString('base64url'),
      });
      expect(result.timedOut).toBe(false);
      expect(result.code).not.toBe(0);
      expect(result.code).not.toBeNull();
      expect(result.stderr).toContain('TOKEN_SIGNING_SECRET');
      expect(result.stderr).not.toContain('API_KEY_HASH_SECRET');
      expect(result.stderr).not.toContain('AUDIT_CHAIN_SECRET');
    });
  });

  describe('a first start explains itself', () => {
    const stderrLines = (result: ProcessResult): string[] =>
      result.stderr.split('\n').filter((line) => line.trim() !== '');

    /**
     * Until stdout holds `text`; fails at once if the child exits first. A first start on embedded PGlite
     * (initdb and every migration) took over 40 s on a machine loaded by a parallel `npm run bench`: the
     * deadline is the test's own (300 s, jest.config.js), less the time to stop the child.
     */
    const untilPrinted = async (child: CapturedChild, text: string): Promise<string> => {
      for (let waited = 0; waited < 240_000; waited += 100) {
        const { stdout, stderr } = child.output();
        if (stdout.includes(text)) return stdout;
        if (child.exitCode !== null) throw new Error(`exited before printing "${text}":\n${stderr}`);
        await sleep(100);
      }
      throw new Error(`never printed "${text}":\n${child.output().stdout}`);
    };

    const stop = async (child: CapturedChild): Promise<void> => {
      child.kill('SIGTERM');
      await exited(child, 45_000);
    };

    it('a bad PORT: one line naming it, saying what it must be', async () => {
      const result = await runMain({ PORT: 'abc', DATA_DIR: tempDir() });
      expect(result.code).toBe(1);
      expect(stderrLines(result)).toEqual(['Invalid configuration: PORT must be an integer number']);
    });

    it('an unreachable DATABASE_URL: one line naming it, without its password', async () => {
      const port = await freeLoopbackPort(); // nothing listens there
      const result = await runMain({
        DATABASE_URL: `postgresql://postgres:hunter2@127.0.0.1:${port}/gatehouse`,
        DATA_DIR: tempDir(),
      });
      expect(result.timedOut).toBe(false);
      expect(result.code).toBe(1);
      expect(stderrLines(result)).toEqual([
        `DATABASE_URL: cannot connect to postgresql://postgres:***@127.0.0.1:${port}/gatehouse (connect ECONNREFUSED 127.0.0.1:${port})`,
      ]);
      expect(result.stdout).toBe('');
    });

    it('an unreachable REDIS_URL: one line naming it', async () => {
      const port = await freeLoopbackPort();
      const result = await runMain({ REDIS_URL: `redis://127.0.0.1:${port}`, DATA_DIR: tempDir() });
      expect(result.code).toBe(1);
      expect(stderrLines(result)).toEqual([
        `REDIS_URL: cannot connect to redis://127.0.0.1:${port} (connect ECONNREFUSED 127.0.0.1:${port})`,
      ]);
    });

    it('readable lines: where it listens, the docs, the database, and a warning when nobody can sign in', async () => {
      const port = await freeLoopbackPort();
      const dataDir = tempDir();
      const child = spawnMain({
        PORT: String(port),
        HOST: '127.0.0.1',
        DATA_DIR: dataDir,
        LOG_FORMAT: 'pretty',
      });
      try {
        const stdout = await untilPrinted(child, 'nobody can sign in');
        const url = `http://127.0.0.1:${port}`;
        expect(stdout).toContain(`Gatehouse ${packageVersion()} listening on ${url}`);
        expect(stdout).toContain(`${url}/docs`);
        expect(stdout).toContain(`database: embedded PGlite in ${dataDir}`);
        expect(stdout).toContain('redis: none');
        expect(stdout).toMatch(/WARN.*Set BOOTSTRAP_ADMIN_EMAIL and BOOTSTRAP_ADMIN_PASSWORD/);
        // Nest's wiring lines are debug, and nothing is JSON.
        expect(stdout).not.toMatch(/InstanceLoader|RoutesResolver|RouterExplorer|Mapped \{/);
        expect(stdout.split('\n').filter((line) => line.startsWith('{'))).toEqual([]);
      } finally {
        await stop(child);
      }
    });

    it('JSON lines when not on a terminal, with how to sign in as the bootstrap administrator', async () => {
      const port = await freeLoopbackPort();
      const databaseUrl = await createTestDatabase();
      const child = spawnMain({
        PORT: String(port),
        HOST: '127.0.0.1',
        DATA_DIR: tempDir(),
        ...instanceDatabaseEnv(databaseUrl),
        DASHBOARD_DIR: tempDir(),
        BOOTSTRAP_ADMIN_EMAIL: 'first-admin@example.com',
        BOOTSTRAP_ADMIN_PASSWORD: 'a-long-enough-password',
      });
      try {
        const entries = logEntriesOf(await untilPrinted(child, 'sign in: POST'));
        const messages = entries.map((entry) => entry.msg);
        expect(messages).toContain(
          `sign in: POST http://127.0.0.1:${port}/v1/auth/token with {"email", "password"}, e.g. as first-admin@example.com (BOOTSTRAP_ADMIN_EMAIL)`,
        );
        // No dashboard build in DASHBOARD_DIR: the banner offers none.
        expect(messages.filter((message) => message.startsWith('dashboard:'))).toEqual([]);
        expect(messages).toContainEqual(
          databaseUrl
            ? bannerDatabaseLine(instanceDatabaseEnv(databaseUrl))
            : expect.stringMatching(/^database: embedded PGlite in /),
        );
        expect(entries.filter((entry) => entry.level >= 40)).toEqual([]);
        expect(entries.map((entry) => entry.context)).not.toContain('InstanceLoader');
      } finally {
        await stop(child);
        if (databaseUrl) await dropTestDatabase(databaseUrl);
      }
    });

    describe('bootstrap settings on an installation that has users', () => {
      let databaseUrl: string | undefined;
      let dataDir: string;
      let dashboardDir: string;
      const FIRST = 'first-admin@example.com';
      const PASSWORD_1 = 'a-long-enough-password';

      beforeAll(async () => {
        databaseUrl = await createTestDatabase(); // undefined on the embedded run: DATA_DIR is kept instead
        dataDir = tempDir();
        // A dashboard build, as `npm run build` leaves one.
        dashboardDir = tempDir();
        writeFileSync(join(dashboardDir, 'index.html'), '<!doctype html><title>Gatehouse</title>');
      });
      afterAll(async () => {
        if (databaseUrl) await dropTestDatabase(databaseUrl);
      });

      /** Starts the real process on the same data with these bootstrap settings; its log up to the banner. */
      const startWith = async (email: string, password: string) => {
        const port = await freeLoopbackPort();
        const child = spawnMain({
          PORT: String(port),
          HOST: '127.0.0.1',
          DATA_DIR: dataDir,
          ...instanceDatabaseEnv(databaseUrl),
          DASHBOARD_DIR: dashboardDir,
          BOOTSTRAP_ADMIN_EMAIL: email,
          BOOTSTRAP_ADMIN_PASSWORD: password,
        });
        try {
          const entries = logEntriesOf(await untilPrinted(child, 'sign in: POST'));
          return {
            url: `http://127.0.0.1:${port}`,
            messages: entries.map((entry) => entry.msg),
            // What it says about the bootstrap settings (other parts may warn of their own matters).
            warnings: entries
              .filter((entry) => entry.level >= 40 && /BOOTSTRAP_/.test(entry.msg))
              .map((entry) => entry.msg),
          };
        } finally {
          await stop(child);
        }
      };
      const signInLine = (url: string) => `sign in: POST ${url}/v1/auth/token with {"email", "password"}`;

      it('creates the administrator on the first start and names it, and the dashboard, in the banner', async () => {
        const { url, messages, warnings } = await startWith(FIRST, PASSWORD_1);
        expect(warnings).toEqual([]);
        expect(messages).toContain(`${signInLine(url)}, e.g. as ${FIRST} (BOOTSTRAP_ADMIN_EMAIL)`);
        expect(messages).toContain(`dashboard: ${url}/dashboard`);
      });

      it('says nothing more when started again with the same settings', async () => {
        const { url, messages, warnings } = await startWith(FIRST, PASSWORD_1);
        expect(warnings).toEqual([]);
        expect(messages).toContain(`${signInLine(url)}, e.g. as ${FIRST} (BOOTSTRAP_ADMIN_EMAIL)`);
      });

      it('a changed BOOTSTRAP_ADMIN_EMAIL: one line says it is not applied, and the banner names no account that does not exist', async () => {
        const { url, messages, warnings } = await startWith('second-admin@example.com', PASSWORD_1);
        expect(warnings).toEqual([
          'BOOTSTRAP_ADMIN_EMAIL is set but users already exist and none is second-admin@example.com; not applied (the bootstrap settings only create the first administrator of an empty installation)',
        ]);
        expect(messages).toContain(signInLine(url));
        expect(messages.join('\n')).not.toContain('second-admin@example.com (BOOTSTRAP_ADMIN_EMAIL)');
      });

      it('a changed BOOTSTRAP_ADMIN_PASSWORD: one line says it is not applied, never the password, and the banner does not suggest it', async () => {
        const changed = 'another-long-password';
        const { url, messages, warnings } = await startWith(FIRST, changed);
        expect(warnings).toHaveLength(1);
        expect(warnings[0]).toMatch(
          new RegExp(
            `^BOOTSTRAP_ADMIN_PASSWORD is set but ${FIRST} already has another password; not applied \\(change it with PATCH /v1/users/usr_[0-9A-Za-z]+\\)$`,
          ),
        );
        expect(messages).toContain(signInLine(url));
        expect(messages.join('\n')).not.toContain(changed);
      });
    });
  });
});

/** The banner's database line for an instance's database variables (test URLs carry no password). */
function bannerDatabaseLine(env: Record<string, string | undefined>): string {
  const direct = env.DATABASE_DIRECT_URL;
  const pooled = direct ? ` through a transaction pooler (LISTEN and migrations at ${direct})` : '';
  return `database: PostgreSQL at ${env.DATABASE_URL}${pooled}`;
}
