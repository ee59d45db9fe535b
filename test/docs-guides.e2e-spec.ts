import { copyFileSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { freeLoopbackPort } from './support/ports';
import {
  bashBlocks,
  examplePorts,
  GATEHOUSE_URL_LINE,
  guideScript,
  startEnvironment,
  withReadmeServer,
} from './support/readme-bash';

/**
 * Every guide in docs/ runs as printed: each page's ```bash blocks, in order, as one bash script (one shell,
 * nothing carried over from another page), against the real entry point started the way the page says: with
 * the environment of its own `VAR=… npm start` line when it has one, else as the README starts it. The script
 * runs offline in a directory of its own holding the clone's README.md and examples/, as a shell in the clone
 * would. See test/support/readme-bash.ts for the conventions: `curl` fails on any status outside 2xx unless
 * the command ends with `# <status>`, every variable a block assigns must hold a value, and the page's one
 * GATEHOUSE_URL_LINE is the only place that names the server.
 */

const PROJECT_ROOT = resolve(__dirname, '..');
const DOCS = join(PROJECT_ROOT, 'docs');

/** Pages whose blocks other specs run, each with the reason. */
const RUN_ELSEWHERE: Record<string, string> = {
  // Its block starts Gatehouse itself beside a stand-in for GitHub's key server.
  'leaked-keys.md': 'test/readme-leaks.e2e-spec.ts',
  // Its blocks start two instances and a worker on a scratch database of their own.
  'production.md': 'test/production-guide.e2e-spec.ts',
  // Generated from the configuration schema; its spec checks that it is current.
  'configuration.md': 'test/configuration-doc.e2e-spec.ts',
};

/** What each page's output must show: the answers its comments promise, where a status alone proves nothing. */
const SHOWS: Record<string, (string | RegExp)[]> = {
  'keys-and-restrictions.md': ['"valid":true', '"code":"invalid_credentials"', '"code":"policy_violation"'],
  'credits-and-usage.md': ['"credits_remaining":999', '"requests":2,"allowed":1,"denied":1'],
  'identities.md': [
    '"credits_remaining":null',
    '"credits_remaining":49999',
    '"external_id":"cus_1042","requests":2,',
  ],
  'verifying-keys.md': [
    '"credits_remaining":49995',
    '"code":"malformed_key"',
    '{"order":{"id":"ord_1042","status":"placed"},"customer":"cus_1042","credits_remaining":49993}',
    '{"order":{"id":"ord_1041","status":"shipped"},"customer":"cus_1042","credits_remaining":49992}',
  ],
  'agents-and-tasks.md': ['"status":"succeeded"', 'the same bytes'],
  'writing-an-agent.md': [
    /event: output\ndata: \{"delta":"README\.md: "\}/,
    /event: status\ndata: \{"status":"succeeded"\}\n/,
    /"result":\{"summary":"README\.md: \d+ lines, \d+ words","result_file_id":"file_\w+"\}/,
  ],
  'model-agents.md': ['"output":"You said: Hello model"', '"finish_reason":"end_turn"'],
  'agents-for-agents.md': [
    '"protocolVersion":"0.3"',
    /task task_\w+: TASK_STATE_COMPLETED/,
    'stream: status TASK_STATE_COMPLETED',
    'conversation docs-conversation: 2 tasks',
    '"state":"completed"',
  ],
  'webhooks.md': ['"secret":"whsec_'],
  'roles-and-audit.md': ['"valid":true'],
  'assistants.md': [
    '"name": "run_echo"',
    '\\"output\\":\\"Hello from an assistant\\"',
    '"status": "succeeded"',
    '"built_in": true',
    '"serverInfo":{"name":"gatehouse"',
    'resource_metadata="',
    '/.well-known/oauth-protected-resource/mcp"',
    '"bearer_methods_supported":["header"]',
  ],
};

const README_START = startEnvironment(readFileSync(join(PROJECT_ROOT, 'README.md'), 'utf8'));

function guides(): { file: string; text: string; blocks: string[] }[] {
  return readdirSync(DOCS)
    .filter((file) => file.endsWith('.md') && !(file in RUN_ELSEWHERE))
    .sort()
    .map((file) => {
      const text = readFileSync(join(DOCS, file), 'utf8');
      return { file, text, blocks: bashBlocks(text) };
    })
    .filter(({ blocks }) => blocks.length > 0);
}

describe('the guides in docs/', () => {
  it('finds the runnable guides, each naming its server once, and the README start command', () => {
    expect(README_START).toEqual({
      BOOTSTRAP_ADMIN_EMAIL: 'admin@example.com',
      BOOTSTRAP_ADMIN_PASSWORD: 'change-me-now',
    });
    const found = guides().map(({ file }) => file);
    expect(found).toEqual(expect.arrayContaining(Object.keys(SHOWS)));
    for (const { file, blocks } of guides()) {
      // The first block makes what the page needs: the server's URL, then (usually) a sign-in.
      expect({ file, first: blocks[0].split('\n')[0] }).toEqual({ file, first: GATEHOUSE_URL_LINE });
      expect(() => guideScript(blocks, 'http://127.0.0.1:1')).not.toThrow();
    }
    const agent = guides().find(({ file }) => file === 'writing-an-agent.md')!;
    expect(startEnvironment(agent.text)).toMatchObject({ ALLOW_PRIVATE_NETWORK_TARGETS: 'true' });
  });

  it('marks the refusals the pages show on purpose', () => {
    const keys = guides().find(({ file }) => file === 'keys-and-restrictions.md')!;
    const script = guideScript(keys.blocks, 'http://127.0.0.1:1234');
    expect(script).toContain('README_EXPECT_STATUS=401 curl');
    expect(script).toContain('README_EXPECT_STATUS=400 curl');
    expect(script).toContain('export GATEHOUSE_URL=http://127.0.0.1:1234');
    expect(script).not.toContain('localhost:3000');
  });

  describe.each(guides().map((guide) => [guide.file, guide] as const))('%s', (file, guide) => {
    it('runs as printed against the real process started as it says, offline', async () => {
      const port = await freeLoopbackPort();
      const ports: Record<string, string> = {};
      for (const example of examplePorts(guide.blocks)) ports[example] = String(await freeLoopbackPort());
      const env = startEnvironment(guide.text) ?? README_START!;
      const label = `docs-${file.replace(/\.md$/, '')}`;
      await withReadmeServer({ port, label, env }, async ({ base, workDir, runScript }) => {
        copyFileSync(join(PROJECT_ROOT, 'README.md'), join(workDir, 'README.md'));
        symlinkSync(join(PROJECT_ROOT, 'examples'), join(workDir, 'examples'));
        // As in a clone after `npm ci`: `npx` finds the dev dependencies' commands (the MCP Inspector's CLI).
        symlinkSync(join(PROJECT_ROOT, 'node_modules'), join(workDir, 'node_modules'));
        writeFileSync(join(workDir, 'guide.sh'), guideScript(guide.blocks, base, ports));
        const run = await runScript('guide.sh', `docs/${file}`);
        for (const shown of SHOWS[file] ?? []) {
          if (typeof shown === 'string') expect(run.stdout).toContain(shown);
          else expect(run.stdout).toMatch(shown);
        }
      });
    });
  });
});
