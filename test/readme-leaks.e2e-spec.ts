import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { freeLoopbackPort } from './support/ports';
import { bashBlocks, guideScript, withReadmeServer } from './support/readme-bash';

/**
 * docs/leaked-keys.md ("When a key leaks") runs as printed: its ```bash blocks (a self-signed secret-scanning report,
 * then the public revocation), in order, as one bash script in a directory of its own, against the real
 * entry point, with no network.
 *
 * The block starts its public-keys server and `npm start &` itself. The public-keys server runs as printed,
 * on a free port instead of 8790; the `npm start &` command (and only it) is replaced by a wait for that
 * server, and the test starts the compiled entry point before the script with the environment that command
 * gives it, as test/docs-guides.e2e-spec.ts does. `localhost:3000` becomes the server's port. A
 * command whose answer the section prints on the next line as `# <status> …` must answer exactly that status
 * (the guides' convention, with the comment on the line after the command); any other curl
 * must answer 2xx.
 */

const PROJECT_ROOT = resolve(__dirname, '..');
const GUIDE = join(PROJECT_ROOT, 'docs', 'leaked-keys.md');
const KEYS_PORT = '8790';
const REVOKED_DETAIL =
  'The API key has been revoked because it was reported leaked (found in public); create a new key.';

/** The page's blocks, their `# <status>` answer lines moved onto the end of the command they answer. */
function leakBlocks(guide: string): string[] {
  return bashBlocks(guide).map((block) => {
    const lines = block.split('\n');
    for (let i = 1; i < lines.length; i++) {
      const status = /^#\s*([1-5]\d\d)\b/.exec(lines[i])?.[1];
      const command = lines[i - 1];
      if (status && command.trim() && !command.trimStart().startsWith('#') && !command.endsWith('\\'))
        lines[i - 1] = `${command}  # ${status}`;
    }
    return lines.join('\n');
  });
}

/** The block's `… npm start &` command (with its continuation lines) and the environment it sets. */
function startCommand(block: string): { text: string; env: Record<string, string> } {
  const match = /^[^\n#]*\\\n(?:[^\n]*\\\n)*[^\n]*\bnpm start &[ \t]*$|^[^\n#]*\bnpm start &[ \t]*$/m.exec(
    block,
  );
  if (!match) throw new Error('no "npm start &" command in the first block of docs/leaked-keys.md');
  const words = match[0].replace(/\\\n/g, ' ').trim().split(/\s+/);
  const env = Object.fromEntries(
    words.slice(0, words.indexOf('npm')).map((word) => {
      const eq = word.indexOf('=');
      if (eq < 1) throw new Error(`"${word}" before npm start is not an assignment`);
      return [word.slice(0, eq), word.slice(eq + 1)];
    }),
  );
  return { text: match[0], env };
}

function leakScript(
  readme: string,
  port: number,
  keysPort: number,
): { script: string; env: Record<string, string> } {
  const blocks = leakBlocks(readme).map((block) =>
    block.replace(new RegExp(`\\b${KEYS_PORT}\\b`, 'g'), String(keysPort)),
  );
  const start = startCommand(blocks[0]);
  // Waits for the public-keys server the line before started (its pid kept for the test to stop it).
  const wait = `echo $! > keys-server.pid; until command curl -sf http://127.0.0.1:${keysPort}/ -o /dev/null; do sleep 0.1; done`;
  blocks[0] = blocks[0].replace(start.text, wait);
  // The guides' own script (statuses enforced, variables checked), with the key the test reads at its end.
  const script = guideScript(blocks, `http://localhost:${port}`) + 'echo; echo "README_VAR KEY=${KEY-}"\n';
  return { script, env: start.env };
}

function stopKeysServer(workDir: string): void {
  const pidFile = join(workDir, 'keys-server.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').trim());
  try {
    if (pid > 0) process.kill(pid, 'SIGKILL');
  } catch {
    // Already gone: the script's exit trap stopped it.
  }
}

describe('docs/leaked-keys.md', () => {
  it('finds both blocks, the server command and the documented refusals', () => {
    const readme = readFileSync(GUIDE, 'utf8');
    expect(bashBlocks(readme)).toHaveLength(2);
    const { script, env } = leakScript(readme, 1234, 5678);
    expect(env).toEqual({
      SECRET_SCANNING_KEYS_URL: 'http://127.0.0.1:5678/',
      BOOTSTRAP_ADMIN_EMAIL: 'admin@example.com',
      BOOTSTRAP_ADMIN_PASSWORD: 'change-me-now',
    });
    expect(script).not.toContain('npm start');
    expect(script).not.toContain('localhost:3000');
    expect(script).not.toContain(KEYS_PORT);
    expect(script).toContain('.listen(5678, "127.0.0.1")');
    // The verify and the forged report answer 401, the public revocation 202.
    expect(script.match(/README_EXPECT_STATUS=401 curl/g)).toHaveLength(2);
    expect(script.match(/README_EXPECT_STATUS=202 curl/g)).toHaveLength(1);
  });

  it('runs as printed against the real process, offline', async () => {
    const readme = readFileSync(GUIDE, 'utf8');
    const port = await freeLoopbackPort();
    const keysPort = await freeLoopbackPort();
    const { script, env } = leakScript(readme, port, keysPort);
    await withReadmeServer({ port, label: 'readme-leaks', env }, async ({ base, workDir, runScript }) => {
      try {
        writeFileSync(join(workDir, 'leaks.sh'), script);
        // bash killed on a timeout leaves the public-keys server holding its output open: stop it too.
        const guard = setTimeout(() => stopKeysServer(workDir), 90_000);
        const run = await runScript('leaks.sh', 'the leak blocks of docs/leaked-keys.md').finally(() =>
          clearTimeout(guard),
        );

        const key = /^README_VAR KEY=(.*)$/m.exec(run.stdout)?.[1] ?? '';
        expect(key).toMatch(/^sk_/);
        const hash = createHash('sha256').update(key).digest('hex');
        // The report: GitHub's feedback format, the key a true positive.
        expect(run.stdout).toContain(
          JSON.stringify([{ token_hash: hash, token_type: 'gatehouse_api_key', label: 'true_positive' }]),
        );
        // The key is refused, saying why.
        expect(run.stdout).toMatch(/"code":"key_revoked"/);
        expect(run.stdout).toContain(`"detail":"${REVOKED_DETAIL}"`);
        // The forged report is refused.
        expect(run.stdout).toMatch(/"code":"invalid_signature"/);
        // The public revocation takes both values.
        expect(run.stdout).toContain('{"received":2}');

        const verify = await fetch(`${base}/v1/auth/verify`, { headers: { authorization: `Bearer ${key}` } });
        expect(verify.status).toBe(401);
        expect(await verify.json()).toMatchObject({ code: 'key_revoked', detail: REVOKED_DETAIL });
      } finally {
        stopKeysServer(workDir);
      }
    });
  });
});
