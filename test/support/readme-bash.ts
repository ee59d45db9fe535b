import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { exited, spawnCaptured, waitUntilLive, type ChildOutput } from './child-process';
import { compiledEntryPoint } from './compiled-app';
import { createTestDatabase, dropTestDatabase } from './test-instance';

/**
 * Running the README's ```bash blocks as written: a prelude for a script under `set -euo pipefail` whose
 * `curl` fails the script on an unexpected HTTP status, and the convention that marks the refusals the
 * README shows on purpose (a command whose last line ends with `# <status>` must answer exactly that),
 * and the real entry point such a script runs against (withReadmeServer).
 */

/** The ```bash blocks of the README from `heading` (the whole line, e.g. `## When a key leaks`) to the next heading of its level or above. */
export function bashBlocksOfSection(readme: string, heading: string): string[] {
  const level = /^#+/.exec(heading)![0].length;
  const start = readme.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`README has no "${heading}" section`);
  const rest = readme.slice(start + heading.length + 2);
  // The next heading of this level or above, outside fenced blocks (their `# comment` lines end nothing).
  const next = new RegExp(`(?:^\`\`\`[^\\n]*\\n[\\s\\S]*?^\`\`\`$|^#{1,${level}} )`, 'gm');
  let end = rest.length;
  for (const m of rest.matchAll(next)) {
    if (!m[0].startsWith('```')) {
      end = m.index;
      break;
    }
  }
  return [...rest.slice(0, end).matchAll(/^```bash\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
}

/** Marks the curl calls of a command documented with a trailing `# <status>` comment as expecting it. */
export function withExpectedStatuses(block: string): string {
  const lines = block.split('\n');
  for (let first = 0; first < lines.length;) {
    let last = first;
    while (last < lines.length - 1 && lines[last].endsWith('\\')) last++;
    const status = /^(?!\s*#).*\s#\s*([1-5]\d\d)\b/.exec(lines[last])?.[1];
    for (let i = first; status && i <= last; i++) {
      lines[i] = lines[i].replace(/(^|[\s($|;&])curl(?=\s)/g, `$1README_EXPECT_STATUS=${status} curl`);
    }
    first = last + 1;
  }
  return lines.join('\n');
}

export const README_BASH_PRELUDE = `set -euo pipefail
shopt -s inherit_errexit

# curl that fails on an unexpected HTTP status (2xx, or README_EXPECT_STATUS when set), showing the body.
curl() {
  local headers body status rc=0
  headers=$(mktemp) body=$(mktemp)
  command curl -D "$headers" "$@" >"$body" || rc=$?
  status=$(awk '/^HTTP\\//{ s = $2 } END { print s }' "$headers")
  cat "$body"
  if [ "$rc" -ne 0 ]; then
    echo "README walkthrough: curl exited $rc: curl $*" >&2
  elif [ -n "\${README_EXPECT_STATUS:-}" ] && [ "$status" != "$README_EXPECT_STATUS" ]; then
    echo "README walkthrough: HTTP $status, expected $README_EXPECT_STATUS: curl $*" >&2
    rc=1
  elif [ -z "\${README_EXPECT_STATUS:-}" ] && [[ "$status" != 2?? ]]; then
    echo "README walkthrough: HTTP $status: curl $*" >&2
    rc=1
  fi
  [ "$rc" -eq 0 ] || cat "$body" >&2
  rm -f "$headers" "$body"
  return "$rc"
}

# Every variable a block assigned holds a value.
readme_check_vars() {
  local name
  for name in "$@"; do
    case "\${!name-}" in
      '' | undefined | null)
        echo "README walkthrough: $name is '\${!name-}' after block $README_BLOCK" >&2
        exit 1
        ;;
    esac
  done
}
`;

const PROJECT_ROOT = resolve(__dirname, '..', '..');
/** The PATH a README script and its server run with: the node running the tests first. */
const PATH = `${dirname(process.execPath)}:${process.env.PATH}`;

/** The real entry point running as the README starts it, and a directory to run a README script in. */
export interface ReadmeServer {
  base: string;
  workDir: string;
  /**
   * Runs `file` (written in workDir) with bash, offline, with only PATH and HOME; throws with the whole
   * transcript, saying `what` failed, unless it exits 0 within 90 s.
   */
  runScript(file: string, what: string): Promise<ChildOutput>;
}

/**
 * Starts the compiled entry point on `port` as the README starts it (`env`, e.g. its bootstrap admin),
 * on a database and data directory of its own, with no network; runs `body` once it is live; then stops
 * it and removes what it made. `label` names the temporary directories.
 */
export async function withReadmeServer(
  options: { port: number; label: string; env: Record<string, string> },
  body: (server: ReadmeServer) => Promise<void>,
): Promise<void> {
  const base = `http://127.0.0.1:${options.port}`;
  const dataDir = mkdtempSync(join(tmpdir(), `gatehouse-${options.label}-data-`));
  const workDir = mkdtempSync(join(tmpdir(), `gatehouse-${options.label}-`));
  const databaseUrl = await createTestDatabase(); // undefined on the embedded run
  const server = spawnCaptured(process.execPath, [compiledEntryPoint('main')], {
    cwd: PROJECT_ROOT,
    env: {
      PATH,
      HOME: process.env.HOME,
      ...options.env,
      PORT: String(options.port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
      ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}),
    },
  });
  try {
    await waitUntilLive(server, base, 90_000);
    await body({
      base,
      workDir,
      async runScript(file, what) {
        const run = await exited(
          spawnCaptured('bash', [file], { cwd: workDir, env: { PATH, HOME: process.env.HOME } }),
          90_000,
        );
        const transcript = `exit ${run.code}${run.timedOut ? ' (timed out)' : ''}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`;
        if (run.code !== 0 || run.timedOut) throw new Error(`${what} failed: ${transcript}`);
        return run;
      },
    });
  } finally {
    if (server.exitCode === null && server.signalCode === null) {
      server.kill('SIGTERM');
      await exited(server, 30_000);
    }
    rmSync(workDir, { recursive: true, force: true });
    rmSync(dataDir, { recursive: true, force: true });
    if (databaseUrl) await dropTestDatabase(databaseUrl);
  }
}
