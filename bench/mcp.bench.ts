/**
 * `npm run bench:mcp`: the MCP server at /mcp against the REST routes it stands for (issue 44), with the
 * official SDK's v1 client, against one Gatehouse (bench-server.ts, compiled, a process of its own, its
 * workers on at the default settings) on a fresh PostgreSQL database (Redis too when REDIS_URL is set).
 *
 * 1. Echo tasks, run to their end: `tools/call run_echo` (the run tool waits until the task ends; its
 *    default wait_seconds, 30) against `POST /v1/tasks` {instruction, agent_type: 'echo'} then
 *    `GET /v1/tasks/{id}?wait=30`, BENCH_CLIENTS (20) clients each, one task at a time per client. Goal:
 *    MCP >= 0.5 of REST.
 * 2. The agents of an organization with BENCH_AGENTS (100) echo agents: `tools/list` against
 *    `GET /v1/agents?limit=100`, BENCH_LIST_CLIENTS (20) clients each. Goal: MCP >= 0.5 of REST.
 *
 * Each phase in its own organization, with an administrator key of its own (limits no run can reach) for
 * both sides. MCP: one SDK Client (StreamableHTTPClientTransport, `Authorization: Bearer <key>`) per
 * concurrent worker, connected before anything is timed (so each holds the GET stream an SDK client opens
 * after initialize, as a real one does). REST: fetch (undici), the HTTP client the SDK's transport uses.
 * Every answer is checked (a task that did not succeed, a list of the wrong length, any error aborts).
 *
 * Throughput on a shared machine drifts from second to second, so the two sides of a phase alternate in
 * BENCH_ROUNDS (7, at least 5) rounds of BENCH_DURATION (5) seconds each, which side goes first
 * alternating with the round; each round's ratio is MCP's rate over REST's of the same round, and the
 * figure is the median of those paired ratios, with each side's median rate. BENCH_WARMUP (2) seconds of
 * each side first, untimed. Also reported: the server's CPU per operation (what each side costs it) and
 * this process's (the clients', which share the machine with it). BENCH_ONLY=tasks|agents runs one phase;
 * BENCH_CPU_PROFILE_DIR has the server write a V8 CPU profile of the run there.
 *
 *   DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres [REDIS_URL=…] npm run bench:mcp
 */
import { execSync } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { median, postJson } from './bench-child';
import { organization, phase, type Sample, setting, withProtocolBench } from './paired-rounds';

const CLIENTS = Math.floor(setting('BENCH_CLIENTS', 20, 1));
const LIST_CLIENTS = Math.floor(setting('BENCH_LIST_CLIENTS', 20, 1));
const AGENTS = Math.floor(setting('BENCH_AGENTS', 100, 1));
const DURATION = setting('BENCH_DURATION', 5, 1);
const ROUNDS = Math.floor(setting('BENCH_ROUNDS', 7, 5));
const WARMUP = setting('BENCH_WARMUP', 2, 0);
const ROUND_SETTINGS = { rounds: ROUNDS, duration: DURATION, warmup: WARMUP };
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL ?? 'info';
/** `tasks` or `agents` runs that phase alone (e.g. for a profile); both by default. */
const ONLY = process.env.BENCH_ONLY;
/** Issue 44: MCP at half the rate of the REST routes it stands for, or better. */
const GOAL = 0.5;

interface TaskView {
  id: string;
  status: string;
}

async function connectClients(mcpUrl: string, key: string, count: number): Promise<Client[]> {
  return Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const client = new Client({ name: `bench-${i}`, version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(mcpUrl), {
          requestInit: { headers: { Authorization: `Bearer ${key}` } },
        }),
      );
      return client;
    }),
  );
}

type Side = 'mcp' | 'rest';

async function main(): Promise<void> {
  await withProtocolBench('mcp', {}, async ({ app, appUrl, getJson, closeFirst }) => {
    const mcpUrl = `${appUrl}/mcp`;

    // 1. Echo tasks to their end.
    const tasks = ONLY && ONLY !== 'tasks' ? undefined : await taskPhase();
    // 2. The agents of an organization with AGENTS of them.
    const lists = ONLY && ONLY !== 'agents' ? undefined : await agentPhase();
    report(tasks, lists);

    async function taskPhase(): Promise<Record<Side, Sample[]>> {
      const tasksOrg = await organization(appUrl, 'Bench tasks');
      const taskClients = await connectClients(mcpUrl, tasksOrg.key, CLIENTS);
      for (const client of taskClients) closeFirst(() => client.close());
      let n = 0;
      return phase(
        app,
        CLIENTS,
        ['mcp', 'rest'],
        {
          rest: async () => {
            const task = await postJson<TaskView>(
              appUrl,
              '/v1/tasks',
              { instruction: `rest task ${n++}`, agent_type: 'echo' },
              tasksOrg.key,
            );
            const ended = await getJson<TaskView>(`/v1/tasks/${task.id}?wait=30`, tasksOrg.auth);
            if (ended.status !== 'succeeded') throw new Error(`REST task ${task.id}: ${ended.status}`);
          },
          mcp: async (worker) => {
            const result = await taskClients[worker].callTool({
              name: 'run_echo',
              arguments: { instruction: `mcp task ${n++}` },
            });
            const task = result.structuredContent as TaskView | undefined;
            if (result.isError || task?.status !== 'succeeded')
              throw new Error(`run_echo: ${JSON.stringify(result).slice(0, 500)}`);
          },
        },
        ROUND_SETTINGS,
      );
    }

    async function agentPhase(): Promise<Record<Side, Sample[]> & { tools: number; listLimit: number }> {
      const agentsOrg = await organization(appUrl, 'Bench agents');
      for (let i = 0; i < AGENTS; i++) {
        await postJson(
          appUrl,
          '/v1/agents',
          { name: `Bench agent ${i}`, type: 'echo', description: `Echo agent number ${i} of the bench.` },
          agentsOrg.key,
        );
      }
      const listClients = await connectClients(mcpUrl, agentsOrg.key, LIST_CLIENTS);
      for (const client of listClients) closeFirst(() => client.close());
      const expectedTools = (await listClients[0].listTools()).tools.length;
      if (expectedTools < AGENTS) throw new Error(`tools/list: ${expectedTools} tools for ${AGENTS} agents`);
      const listLimit = Math.min(AGENTS, 100);
      // The built-in agents are listed too: a full page is listLimit, or all of them when fewer.
      const expectedPage = (
        await getJson<{ data: unknown[] }>(`/v1/agents?limit=${listLimit}`, agentsOrg.auth)
      ).data.length;
      if (expectedPage < listLimit) throw new Error(`GET /v1/agents: ${expectedPage} of ${AGENTS} agents`);
      const samples = await phase(
        app,
        LIST_CLIENTS,
        ['mcp', 'rest'],
        {
          rest: async () => {
            const page = await getJson<{ data: unknown[] }>(`/v1/agents?limit=${listLimit}`, agentsOrg.auth);
            if (page.data.length !== expectedPage)
              throw new Error(`GET /v1/agents: ${page.data.length} of ${expectedPage}`);
          },
          mcp: async (worker) => {
            const { tools } = await listClients[worker].listTools();
            if (tools.length !== expectedTools) throw new Error(`tools/list: ${tools.length} tools`);
          },
        },
        ROUND_SETTINGS,
      );
      return { ...samples, tools: expectedTools, listLimit };
    }
  });
}

function report(
  tasks: Record<Side, Sample[]> | undefined,
  lists: (Record<Side, Sample[]> & { tools: number; listLimit: number }) | undefined,
): void {
  const git = (args: string): string => {
    try {
      return execSync(`git ${args}`, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      return '';
    }
  };
  const commit = git('rev-parse --short HEAD') || 'unknown';
  const srcChanged = git('status --porcelain -- src') ? ' (src/ has uncommitted changes)' : '';
  console.log(
    `\ncommit ${commit}${srcChanged}; node ${process.version}; PostgreSQL${process.env.REDIS_URL ? ' + Redis' : ''}; ` +
      `Gatehouse in its own process, workers at default settings, LOG_LEVEL=${LOG_LEVEL}\n` +
      `duration=${DURATION}s warmup=${WARMUP}s rounds=${ROUNDS} (interleaved, first side alternating); ` +
      `medians over the rounds; MCP: the SDK's v1 client, one per worker; REST: fetch`,
  );
  let allMet = true;
  const section = (title: string, samples: Record<Side, Sample[]>, mcpLabel: string, restLabel: string) => {
    const ratios = samples.mcp.map((sample, round) => sample.rps / samples.rest[round].rps);
    const ratio = median(ratios);
    const met = ratio >= GOAL;
    allMet &&= met;
    const rate = (side: Side) => median(samples[side].map((s) => s.rps)).toFixed(0);
    const cpu = (side: Side) => median(samples[side].map((s) => s.cpu)).toFixed(0);
    const clientCpu = (side: Side) => median(samples[side].map((s) => s.clientCpu)).toFixed(0);
    const rounds = (side: Side) => samples[side].map((s) => s.rps.toFixed(0)).join(', ');
    const line = (label: string, side: Side) =>
      console.log(
        `  ${label.padEnd(46)} ${rate(side).padStart(6)}/s  server ${cpu(side).padStart(5)} µs, ` +
          `clients ${clientCpu(side).padStart(5)} µs each  (rounds ${rounds(side)})`,
      );
    console.log(`\n${title}`);
    line(mcpLabel, 'mcp');
    line(restLabel, 'rest');
    console.log(
      `  MCP / REST: median of paired ratios ${ratio.toFixed(2)} (rounds ${Math.min(...ratios).toFixed(2)}..` +
        `${Math.max(...ratios).toFixed(2)}); goal >= ${GOAL}: ${met ? 'met' : 'NOT met'}`,
    );
  };
  if (tasks)
    section(
      `1. echo tasks to their end, ${CLIENTS} clients each side`,
      tasks,
      'tools/call run_echo (waits, default 30 s)',
      'POST /v1/tasks + GET /v1/tasks/{id}?wait=30',
    );
  if (lists)
    section(
      `2. agents of an organization with ${AGENTS} agents (${lists.tools} tools), ${LIST_CLIENTS} clients each side`,
      lists,
      'tools/list',
      `GET /v1/agents?limit=${lists.listLimit}`,
    );
  console.log(`\nissue 44 goals${ONLY ? ` (${ONLY} only)` : ''}: ${allMet ? 'all met' : 'NOT all met'}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
