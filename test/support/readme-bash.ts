import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { exited, spawnCaptured, waitUntilLive, type ChildOutput } from './child-process';
import { compiledEntryPoint } from './compiled-app';
import { createTestDatabase, dropTestDatabase, instanceDatabaseEnv, runRedisEnv } from './test-instance';

/**
 * Running the README's and the guides' (docs/*.md) ```bash blocks as written: a prelude for a script under
 * `set -euo pipefail` whose `curl` fails the script on an unexpected HTTP status, the convention that marks
 * the refusals a page shows on purpose (a command whose last line ends with `# <status>` must answer exactly
 * that), the one line that names the server (`export GATEHOUSE_URL=http://localhost:3000`), and the real
 * entry point such a script runs against (withReadmeServer).
 */

/** The line every page's first block starts with; a script runs with the real server's URL in its place. */
export const GATEHOUSE_URL_LINE = 'export GATEHOUSE_URL=http://localhost:3000';

/** Every ```bash block of a markdown page, in order (other fences, such as ```sh, are illustrations). */
export function bashBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```bash\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
}

/**
 * The environment of the first `VAR=value … npm start` command of a page (`npm ci && ` before it allowed):
 * how the page starts its server. Undefined when the page starts none.
 */
export function startEnvironment(markdown: string): Record<string, string> | undefined {
  const match = /^(?:npm ci && )?((?:[A-Z][A-Z0-9_]*=\S+\s+)+)npm start\s*$/m.exec(markdown);
  if (!match) return undefined;
  return Object.fromEntries(
    match[1]
      .trim()
      .split(/\s+/)
      .map((word) => [word.slice(0, word.indexOf('=')), word.slice(word.indexOf('=') + 1)]),
  );
}

/** The ports a page's blocks give the servers they start themselves (`PORT=8787 node …`). */
export function examplePorts(blocks: readonly string[]): string[] {
  return [...new Set(blocks.flatMap((block) => [...block.matchAll(/\bPORT=(\d{4,5})\b/g)].map((m) => m[1])))];
}

/**
 * One script of a page's blocks, in order, as one shell would run them: the prelude, then each block with its
 * documented statuses enforced and its variables checked after it. GATEHOUSE_URL_LINE names `base` instead,
 * and each port of `ports` (a page's example port: a free one) replaces it everywhere. Whatever a block starts
 * in the background is stopped when the script exits. Throws when a block names `localhost:3000` itself.
 */
export function guideScript(
  blocks: readonly string[],
  base: string,
  ports: Record<string, string> = {},
): string {
  const parts = [README_BASH_PRELUDE, `trap 'kill $(jobs -p) 2>/dev/null || true' EXIT`];
  blocks.forEach((block, index) => {
    const fixed = block
      .split('\n')
      .find((line) => line.includes('localhost:3000') && line !== GATEHOUSE_URL_LINE);
    if (fixed) throw new Error(`block ${index + 1} names localhost:3000 instead of $GATEHOUSE_URL: ${fixed}`);
    let text = withExpectedStatuses(block).replaceAll(GATEHOUSE_URL_LINE, `export GATEHOUSE_URL=${base}`);
    for (const [from, to] of Object.entries(ports)) text = text.replace(new RegExp(`\\b${from}\\b`, 'g'), to);
    // Variables the block sets in its shell, not those it gives one command (`PORT=8787 node …`).
    const assigned = [
      ...new Set(
        [...block.matchAll(/^\s*(?:export\s+)?([A-Za-z_]\w*)=(.*)$/gm)]
          .filter((m) => !/^\S*\s+(?:[A-Za-z_]\w*=\S*\s+)*(?:node|npm)\b/.test(m[2]))
          .map((m) => m[1]),
      ),
    ];
    parts.push(
      `README_BLOCK=${index + 1}`,
      text,
      assigned.length ? `readme_check_vars ${assigned.join(' ')}` : ':',
    );
  });
  return parts.join('\n') + '\n';
}

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
  return bashBlocks(rest.slice(0, end));
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
      ...(databaseUrl ? instanceDatabaseEnv(databaseUrl) : {}),
      ...runRedisEnv(),
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
