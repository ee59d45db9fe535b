import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CORE_VARIABLES, EnvironmentVariables } from '../src/config/environment';
import { exited, spawnCaptured } from './support/child-process';

/**
 * docs/configuration.md is generated from the schema (scripts/configuration-doc.ts): it is current (what
 * `npm run docs:configuration:check` checks in CI), lists every variable the service reads with its default,
 * and the check fails on a copy that differs.
 */

const ROOT = resolve(__dirname, '..');
const DOC = join(ROOT, 'docs', 'configuration.md');

function runCheck(file?: string) {
  const args = ['-r', 'ts-node/register/transpile-only', 'scripts/configuration-doc.ts', '--check'];
  return exited(
    spawnCaptured(process.execPath, file ? [...args, file] : args, {
      cwd: ROOT,
      env: { PATH: process.env.PATH, HOME: process.env.HOME },
    }),
    120_000,
  );
}

describe('docs/configuration.md', () => {
  const doc = readFileSync(DOC, 'utf8');

  it('is what `npm run docs:configuration` writes', async () => {
    const run = await runCheck();
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
  });

  it('lists every variable with its default', () => {
    const defaults = new EnvironmentVariables() as unknown as Record<string, unknown>;
    for (const name of CORE_VARIABLES) {
      const row = new RegExp(`^\\| \`${name}\` +\\| ([^|]+?) +\\|`, 'm').exec(doc);
      expect({ name, listed: Boolean(row) }).toEqual({ name, listed: true });
      const value = defaults[name];
      const shown =
        value === undefined ? /^unset/ : value === '' ? /^empty$/ : new RegExp(`^\`${String(value)}\`$`);
      expect({ name, default: row![1] }).toEqual({ name, default: expect.stringMatching(shown) });
    }
    expect(doc).toMatch(/^\| `TOKEN_SIGNING_SECRET` +\| unset +\| \*\*required\*\* in production/m);
  });

  it('fails the check when the file differs from what the schema gives', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-configuration-doc-'));
    try {
      const stale = join(dir, 'configuration.md');
      writeFileSync(stale, doc.replace('| `PORT`       | `3000`', '| `PORT`       | `8080`'));
      expect(readFileSync(stale, 'utf8')).not.toBe(doc);
      const run = await runCheck(stale);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain('is not current: run `npm run docs:configuration`');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
