import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { freeLoopbackPort } from './support/ports';
import { README_BASH_PRELUDE, withExpectedStatuses, withReadmeServer } from './support/readme-bash';

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
    const env = { BOOTSTRAP_ADMIN_EMAIL: 'admin@example.com', BOOTSTRAP_ADMIN_PASSWORD: 'change-me-now' };
    await withReadmeServer({ port, label: 'readme', env }, async ({ base, workDir, runScript }) => {
      copyFileSync(README, join(workDir, 'README.md'));
      writeFileSync(join(workDir, 'walkthrough.sh'), walkthroughScript(readFileSync(README, 'utf8'), port));
      const run = await runScript('walkthrough.sh', 'the walkthrough');
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
    });
  });
});
