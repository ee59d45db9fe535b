import { mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { buildIfStale } = require('../scripts/build-if-stale') as {
  buildIfStale(root: string, build?: string): string;
};

/**
 * `npm start` builds only when dist/ is older than its inputs (scripts/build-if-stale.js): here on a
 * project of its own whose "build" counts how often it ran.
 */
describe('npm start builds only a stale dist/', () => {
  let root: string;
  const build = `node -e "const fs = require('fs'); fs.mkdirSync('dist', { recursive: true }); fs.appendFileSync('builds', 'x')"`;
  const builds = () => readFileSync(join(root, 'builds'), 'utf8').length;

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'gatehouse-build-'));
    mkdirSync(join(root, 'src', 'feature'), { recursive: true });
    writeFileSync(join(root, 'src', 'feature', 'a.ts'), 'export const a = 1;\n');
    writeFileSync(join(root, 'package.json'), '{}\n');
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('builds a project never built, then not again while nothing changed', () => {
    expect(buildIfStale(root, build)).toBe('built (dist/ has not been built here yet)');
    expect(buildIfStale(root, build)).toBe('dist/ is current: not rebuilt');
    expect(builds()).toBe(1);
  });

  it('builds again once a source file is newer than the last build', () => {
    buildIfStale(root, build);
    const later = new Date(Date.now() + 60_000);
    const changed = join(root, 'src', 'feature', 'a.ts');
    utimesSync(changed, later, later);
    expect(buildIfStale(root, build)).toBe(`built (${changed} changed since the last build)`);
    expect(builds()).toBe(2);
  });

  it('does not stamp a build that failed, so the next start builds again', () => {
    expect(() => buildIfStale(root, 'node -e "process.exit(3)"')).toThrow();
    expect(buildIfStale(root, build)).toBe('built (dist/ has not been built here yet)');
  });
});
