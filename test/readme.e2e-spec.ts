import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { freeLoopbackPort } from './support/ports';
import {
  bashBlocks,
  bashBlocksOfSection,
  GATEHOUSE_URL_LINE,
  guideScript,
  startEnvironment,
  withReadmeServer,
} from './support/readme-bash';

/**
 * The README stays a five-minute read that works: under 250 lines, opening with the two commands for a fresh
 * machine, and a quickstart that, run as printed against the entry point started as command 1 starts it,
 * ends with a verified key. Every relative link of the README and of docs/*.md names a file that exists (and,
 * for a `#fragment` into a markdown page, one of its headings).
 */

const PROJECT_ROOT = resolve(__dirname, '..');
const README = join(PROJECT_ROOT, 'README.md');
const MAX_LINES = 250;
const INSTALL_AND_RUN =
  'npm ci && BOOTSTRAP_ADMIN_EMAIL=admin@example.com BOOTSTRAP_ADMIN_PASSWORD=change-me-now npm start';
const INSTALL_AND_TEST = 'npm ci && npm test';

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsOf(markdown: string): Set<string> {
  const outsideFences = markdown.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '');
  return new Set([...outsideFences.matchAll(/^#{1,6} (.*)$/gm)].map((m) => anchorOf(m[1])));
}

/** The relative links of a page that name no existing file (or no heading of the page they name). */
function brokenLinks(page: string): string[] {
  const text = readFileSync(page, 'utf8').replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '');
  const broken: string[] = [];
  for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    if (/^[a-z]+:/i.test(target)) continue; // https:, mailto:
    const [path, fragment] = target.split('#');
    const file = path ? resolve(dirname(page), path) : page;
    if (!existsSync(file)) {
      broken.push(`${target} (no such file)`);
      continue;
    }
    if (fragment && file.endsWith('.md') && !anchorsOf(readFileSync(file, 'utf8')).has(fragment)) {
      broken.push(`${target} (no such heading)`);
    }
  }
  return broken;
}

describe('the README', () => {
  const readme = readFileSync(README, 'utf8');

  it(`is under ${MAX_LINES} lines`, () => {
    expect(readme.split('\n').length).toBeLessThan(MAX_LINES);
  });

  it('opens with the two commands for a fresh machine', () => {
    const [first] = bashBlocks(readme);
    const commands = first.split('\n').filter((line) => line.trim() && !line.startsWith('#'));
    expect(commands).toEqual([INSTALL_AND_RUN, INSTALL_AND_TEST]);
    expect(startEnvironment(readme)).toEqual({
      BOOTSTRAP_ADMIN_EMAIL: 'admin@example.com',
      BOOTSTRAP_ADMIN_PASSWORD: 'change-me-now',
    });
  });

  it('has a quickstart of under 20 lines that names its server once', () => {
    const blocks = bashBlocksOfSection(readme, '## Quickstart');
    expect(blocks).toHaveLength(1);
    expect(blocks[0].split('\n')[0]).toBe(GATEHOUSE_URL_LINE);
    expect(blocks[0].trimEnd().split('\n').length).toBeLessThan(20);
    expect(() => guideScript(blocks, 'http://127.0.0.1:1')).not.toThrow();
  });

  it('links only to files and headings that exist, as do the guides', () => {
    const docs = join(PROJECT_ROOT, 'docs');
    const pages = [
      README,
      ...readdirSync(docs)
        .filter((f) => f.endsWith('.md'))
        .map((f) => join(docs, f)),
    ];
    const broken = pages.flatMap((page) =>
      brokenLinks(page).map((link) => `${page.slice(PROJECT_ROOT.length + 1)}: ${link}`),
    );
    expect(broken).toEqual([]);
  });

  it('runs its quickstart as printed against the process command 1 starts, ending with a verified key', async () => {
    const port = await freeLoopbackPort();
    const blocks = bashBlocksOfSection(readme, '## Quickstart');
    const env = startEnvironment(readme)!;
    await withReadmeServer({ port, label: 'readme', env }, async ({ base, workDir, runScript }) => {
      const script = guideScript(blocks, base) + 'echo; echo "README_VAR KEY=$KEY"\n';
      writeFileSync(join(workDir, 'quickstart.sh'), script);
      const run = await runScript('quickstart.sh', "the README's quickstart");
      const lines = run.stdout.trimEnd().split('\n');
      const key = /^README_VAR KEY=(sk_\w+)$/.exec(lines.at(-1) ?? '')?.[1];
      // The last thing the quickstart prints is its key, verified.
      expect(JSON.parse(lines.at(-2) ?? '{}')).toMatchObject({ valid: true, name: 'my first key' });
      expect(key).toBeDefined();
      const verify = await fetch(`${base}/v1/auth/verify`, { headers: { authorization: `Bearer ${key}` } });
      expect(verify.status).toBe(200);
      expect(await verify.json()).toMatchObject({ valid: true, name: 'my first key', role: 'developer' });
    });
  });
});
