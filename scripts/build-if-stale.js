#!/usr/bin/env node
/**
 * `npm start` (and `npm run start:worker`) build first only when dist/ is older than what it is built from:
 * a start after a build, or a second start, no longer spends 10-30 s rebuilding. The build writes
 * dist/.build-stamp once it has succeeded; any input newer than the stamp (a source file, the dashboard, the
 * lockfile, a compiler setting) or a missing stamp means a build. Modification times, not hashes: a
 * checkout or an edit only ever makes a file newer, so a stale build is never taken for a current one.
 */
const { execSync } = require('node:child_process');
const { existsSync, readdirSync, statSync, utimesSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

/** What dist/ is built from, relative to the project root: folders are walked, files taken as they are. */
const INPUTS = [
  'src',
  'dashboard',
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'tsconfig.build.json',
  'nest-cli.json',
];
const SKIPPED = new Set(['node_modules', 'dist']);
const STAMP = join('dist', '.build-stamp');

/** The first input (path) modified after `sinceMs`, or undefined when none is. */
function newerInput(root, sinceMs) {
  const walk = (path) => {
    if (!existsSync(path)) return undefined;
    const stats = statSync(path);
    if (!stats.isDirectory()) return stats.mtimeMs > sinceMs ? path : undefined;
    for (const name of readdirSync(path)) {
      if (SKIPPED.has(name)) continue;
      const found = walk(join(path, name));
      if (found) return found;
    }
    return undefined;
  };
  for (const input of INPUTS) {
    const found = walk(join(root, input));
    if (found) return found;
  }
  return undefined;
}

/** Why `root`'s dist/ must be built again, or undefined when it is current. */
function staleReason(root) {
  const stamp = join(root, STAMP);
  if (!existsSync(stamp)) return 'dist/ has not been built here yet';
  const newer = newerInput(root, statSync(stamp).mtimeMs);
  return newer && `${newer} changed since the last build`;
}

/** Builds `root` with `build` (a shell command) when it is stale, then stamps it; says which it did. */
function buildIfStale(root, build = 'npm run build') {
  const reason = staleReason(root);
  if (!reason) return 'dist/ is current: not rebuilt';
  // The stamp's time is taken before the build: a file saved while it runs is newer, so it builds again.
  const startedAt = new Date();
  execSync(build, { cwd: root, stdio: 'inherit' });
  writeFileSync(join(root, STAMP), `${startedAt.toISOString()}\n`);
  utimesSync(join(root, STAMP), startedAt, startedAt);
  return `built (${reason})`;
}

module.exports = { buildIfStale, staleReason };

if (require.main === module) {
  console.log(`gatehouse: ${buildIfStale(join(__dirname, '..'))}`);
}
