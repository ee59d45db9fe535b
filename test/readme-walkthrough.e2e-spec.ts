import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { exited, spawnCaptured, waitUntilLive } from './support/child-process';
import { freeLoopbackPort } from './support/ports';
import { createTestDatabase, dropTestDatabase } from './support/test-app';
import { compiledEntryPoint } from './support/compiled-app';
import { README_BASH_PRELUDE, withExpectedStatuses } from './support/readme-bash';

/**
 * The README's "Using the API" walkthrough runs as written: every ```bash block of that section, in order,
 * as one bash script against the real entry point started as the README starts it, with no network.
 *
 * Only `localhost:3000` is rewritten to the real port. The script runs under `set -euo pipefail`, and `curl`
 * is a function that calls the real curl and fails the script on any HTTP status outside 2xx, printing the
 * body. Convention for the refusals the README shows on purpose: a command whose last line ends with a
 * comment starting with a status code (`... # 401`, `... # 202, status "queued"`) must answer exactly that
 * status. After each block, every variable the block assigns must be non-empty and not `undefined`/`null`.
 */

jest.setTimeout(240_000);

const PROJECT_ROOT = resolve(__dirname, '..');
const README = join(PROJECT_ROOT, 'README.md');
const NAMED_VARS = ['TOKEN', 'KEY', 'KEY_ID', 'FILE_ID', 'TASK_ID'] as const;

/**
 * The ```bash blocks of "## Using the API" (up to "## Configuration"), in order, but those of "### Writing an
 * agent" and "#### A service that checks its callers": they need an agent running beside a server that allows
 * loopback targets, or the example service running beside the server, and test/writing-an-agent.e2e-spec.ts
 * and test/verify-service-example.e2e-spec.ts run them so.
 */
function walkthroughBlocks(readme: string): string[] {
  const start = readme.search(/^## Using the API$/m);
  const end = readme.search(/^## Configuration$/m);
  if (start < 0 || end < start) throw new Error('README has no "## Using the API" section');
  // Up to its next heading: fenced blocks are skipped whole, so their `# comment` lines end nothing.
  const section = readme
    .slice(start, end)
    .replace(/^### Writing an agent$(?:^```[^\n]*\n[\s\S]*?^```$|[\s\S])*?(?=^#{1,3} )/m, '')
    .replace(
      /^#### A service that checks its callers$(?:^```[^\n]*\n[\s\S]*?^```$|[\s\S])*?(?=^#{1,4} )/m,
      '',
    );
  return [...section.matchAll(/^```bash\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
}

function walkthroughScript(readme: string, port: number): string {
  const blocks = walkthroughBlocks(readme);
  const parts = [README_BASH_PRELUDE];
  blocks.forEach((block, index) => {
    const assigned = [...new Set([...block.matchAll(/^\s*([A-Za-z_]\w*)=/gm)].map((m) => m[1]))];
    parts.push(
      `README_BLOCK=${index + 1}`,
      withExpectedStatuses(block).replaceAll('localhost:3000', `localhost:${port}`),
      `readme_check_vars ${assigned.join(' ')}`,
    );
  });
  parts.push('echo', ...NAMED_VARS.map((name) => `echo "README_VAR ${name}=\${${name}-}"`));
  return parts.join('\n') + '\n';
}

describe('the README walkthrough', () => {
  it('finds the blocks and the documented refusals', () => {
    const blocks = walkthroughBlocks(readFileSync(README, 'utf8'));
    expect(blocks.length).toBeGreaterThanOrEqual(4);
    const script = walkthroughScript(readFileSync(README, 'utf8'), 1234);
    expect(script).toContain('README_EXPECT_STATUS=401 curl');
    expect(script).not.toContain('localhost:3000');
    // The sections other tests run are left out.
    expect(script).not.toContain('summarize-agent.mjs');
    expect(script).not.toContain('orders-service.mjs');
  });

  it('runs as written against the real process, offline', async () => {
    const port = await freeLoopbackPort();
    const base = `http://127.0.0.1:${port}`;
    const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-readme-data-'));
    const workDir = mkdtempSync(join(tmpdir(), 'gatehouse-readme-'));
    const databaseUrl = await createTestDatabase(); // undefined on the embedded run
    const path = `${dirname(process.execPath)}:${process.env.PATH}`;
    const server = spawnCaptured(process.execPath, [compiledEntryPoint('main')], {
      cwd: PROJECT_ROOT,
      env: {
        PATH: path,
        HOME: process.env.HOME,
        BOOTSTRAP_ADMIN_EMAIL: 'admin@example.com',
        BOOTSTRAP_ADMIN_PASSWORD: 'change-me-now',
        PORT: String(port),
        HOST: '127.0.0.1',
        DATA_DIR: dataDir,
        LOG_LEVEL: 'warn',
        ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
        ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}),
      },
    });
    try {
      await waitUntilLive(server, base, 90_000);

      copyFileSync(README, join(workDir, 'README.md'));
      writeFileSync(join(workDir, 'walkthrough.sh'), walkthroughScript(readFileSync(README, 'utf8'), port));
      const run = await exited(
        spawnCaptured('bash', ['walkthrough.sh'], {
          cwd: workDir,
          env: { PATH: path, HOME: process.env.HOME },
        }),
        90_000,
      );
      const transcript = `exit ${run.code}${run.timedOut ? ' (timed out)' : ''}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`;
      if (run.code !== 0 || run.timedOut) throw new Error(`the walkthrough failed: ${transcript}`);

      const vars = Object.fromEntries(
        [...run.stdout.matchAll(/^README_VAR (\w+)=(.*)$/gm)].map((m) => [m[1], m[2]]),
      );
      expect(Object.keys(vars).sort()).toEqual([...NAMED_VARS].sort());
      for (const name of NAMED_VARS) {
        expect({ name, value: vars[name] }).toEqual({
          name,
          value: expect.not.stringMatching(/^(|undefined|null)$/),
        });
      }
      expect(vars.KEY).toMatch(/^sk_/);
      expect(vars.KEY_ID).toMatch(/^key_/);
      expect(vars.FILE_ID).toMatch(/^file_/);
      expect(vars.TASK_ID).toMatch(/^task_/);

      // The task the README started succeeded, and the README showed it so.
      expect(run.stdout).toContain('"status":"succeeded"');
      const task = await fetch(`${base}/v1/tasks/${vars.TASK_ID}`, {
        headers: { authorization: `Bearer ${vars.KEY}` },
      });
      expect(task.status).toBe(200);
      expect(((await task.json()) as { status: string }).status).toBe('succeeded');
      // The file downloaded back is the one uploaded.
      expect(readFileSync(join(workDir, 'copy.md'))).toEqual(readFileSync(README));
    } finally {
      if (server.exitCode === null && server.signalCode === null) {
        server.kill('SIGTERM');
        await exited(server, 30_000);
      }
      rmSync(workDir, { recursive: true, force: true });
      rmSync(dataDir, { recursive: true, force: true });
      if (databaseUrl) await dropTestDatabase(databaseUrl);
    }
  });
});
