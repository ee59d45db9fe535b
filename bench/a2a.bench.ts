/**
 * `npm run bench:a2a`: the A2A endpoint (issue 46) against the REST routes it stands for, with the official
 * SDK's client (@a2a-js/sdk, JSON-RPC, A2A 1.0), against one Gatehouse (bench-server.ts, compiled, a process
 * of its own, its workers on at the default settings) on a fresh PostgreSQL database (Redis too when
 * REDIS_URL is set).
 *
 * 1. Echo tasks, run to their end: a blocking `SendMessage` to an echo agent against `POST /v1/tasks`
 *    {instruction, agent_type: 'echo', agent_id} then `GET /v1/tasks/{id}?wait=30`, BENCH_CLIENTS (20)
 *    clients each, one task at a time per client. Goal: A2A >= 0.5 of REST. Every answer is checked (a task
 *    not COMPLETED, or not succeeded, aborts). Paired interleaved rounds as bench:mcp: BENCH_ROUNDS (7)
 *    rounds of BENCH_DURATION (5) s, the first side alternating, the median of the rounds' ratios.
 * 2. Streams: SQL statements per delivered event with 1 and with BENCH_SUBSCRIBERS (20) `SubscribeToTask`
 *    streams on one running task (an http agent of the bench's own that holds its run while the bench posts
 *    BENCH_STREAM_EVENTS (200) progress events with the run's task token). The claim: statements per event
 *    do not grow with the subscribers (one read per event for all of them, as task streams do).
 *
 * The SDK's client calls the URL the agent card names, built from PUBLIC_URL; the bench's server listens
 * on a port of its own choosing, so the card the bench fetches is handed to ClientFactory.createFromAgentCard
 * with its interfaces' URL set to where the server listens (nothing else of it changed).
 *
 *   DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres [REDIS_URL=…] npm run bench:a2a
 */
import { execSync } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AgentCard, Role, TaskState } from '@a2a-js/sdk';
import { type Client, ClientFactory, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { median, postJson } from './bench-child';
import { organization, phase, type Sample, setting, withProtocolBench } from './paired-rounds';

const CLIENTS = Math.floor(setting('BENCH_CLIENTS', 20, 1));
const SUBSCRIBERS = Math.floor(setting('BENCH_SUBSCRIBERS', 20, 2));
const STREAM_EVENTS = Math.floor(setting('BENCH_STREAM_EVENTS', 200, 1));
const DURATION = setting('BENCH_DURATION', 5, 1);
const ROUNDS = Math.floor(setting('BENCH_ROUNDS', 7, 5));
const WARMUP = setting('BENCH_WARMUP', 2, 0);
const ROUND_SETTINGS = { rounds: ROUNDS, duration: DURATION, warmup: WARMUP };
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL ?? 'info';
/** `tasks` or `streams` runs that phase alone (e.g. for a profile); both by default. */
const ONLY = process.env.BENCH_ONLY;
/** Issue 46: A2A at half the rate of the REST routes it stands for, or better. */
const GOAL = 0.5;

interface TaskView {
  id: string;
  status: string;
}

/** SDK clients of the agent, its card fetched once, its interfaces pointed at where the server listens. */
async function connectClients(
  appUrl: string,
  agentId: string,
  key: string,
  count: number,
): Promise<Client[]> {
  const withKey: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('Authorization', `Bearer ${key}`);
    return fetch(input, { ...init, headers });
  };
  const response = await withKey(`${appUrl}/a2a/${agentId}/.well-known/agent-card.json`, {
    headers: { 'A2A-Version': '1.0' },
  });
  if (!response.ok) throw new Error(`agent card: ${response.status} ${await response.text()}`);
  const card = AgentCard.fromJSON(await response.json());
  for (const entry of card.supportedInterfaces) entry.url = `${appUrl}/a2a/${agentId}`;
  const factory = new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl: withKey })] });
  return Promise.all(Array.from({ length: count }, () => factory.createFromAgentCard(card)));
}

/** A blocking SendMessage of `instruction`. */
const sendMessage = (instruction: string) => ({
  tenant: '',
  message: {
    messageId: `bench-${Math.random().toString(36).slice(2)}`,
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [
      {
        content: { $case: 'text' as const, value: instruction },
        metadata: undefined,
        filename: '',
        mediaType: '',
      },
    ],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  },
  configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: false },
  metadata: undefined,
});

type Side = 'a2a' | 'rest';

async function main(): Promise<void> {
  // The streams phase's http agent listens on loopback.
  await withProtocolBench(
    'a2a',
    { ALLOW_PRIVATE_NETWORK_TARGETS: 'true' },
    async ({ app, appUrl, getJson, closeFirst }) => {
      const queries = async (): Promise<{ total: number; taskEvents: number }> => {
        const reply = app.next<{ total: number; taskEvents: number }>('queries');
        app.child.send({ type: 'queries' });
        return reply;
      };

      // 1. Echo tasks to their end.
      const tasks = ONLY && ONLY !== 'tasks' ? undefined : await taskPhase();
      // 2. Statements per streamed event, with one subscriber and with many.
      const streams = ONLY && ONLY !== 'streams' ? undefined : await streamPhase();
      report(tasks, streams);

      async function taskPhase(): Promise<Record<Side, Sample[]>> {
        const tasksOrg = await organization(appUrl, 'Bench tasks');
        const agent = await postJson<{ id: string }>(
          appUrl,
          '/v1/agents',
          { name: 'Bench echo', type: 'echo' },
          tasksOrg.key,
        );
        const taskClients = await connectClients(appUrl, agent.id, tasksOrg.key, CLIENTS);
        let n = 0;
        return phase(
          app,
          CLIENTS,
          ['a2a', 'rest'],
          {
            rest: async () => {
              const task = await postJson<TaskView>(
                appUrl,
                '/v1/tasks',
                { instruction: `rest task ${n++}`, agent_type: 'echo', agent_id: agent.id },
                tasksOrg.key,
              );
              const ended = await getJson<TaskView>(`/v1/tasks/${task.id}?wait=30`, tasksOrg.auth);
              if (ended.status !== 'succeeded') throw new Error(`REST task ${task.id}: ${ended.status}`);
            },
            a2a: async (worker) => {
              const answer = (await taskClients[worker].sendMessage(sendMessage(`a2a task ${n++}`))) as {
                id?: string;
                status?: { state: TaskState };
              };
              if (answer.status?.state !== TaskState.TASK_STATE_COMPLETED)
                throw new Error(`SendMessage: ${JSON.stringify(answer).slice(0, 500)}`);
            },
          },
          ROUND_SETTINGS,
        );
      }

      /** Statements per delivered progress event with `subscribers` SubscribeToTask streams on one task. */
      async function streamPhase(): Promise<
        { subscribers: number; perEvent: number; taskEventsPerEvent: number }[]
      > {
        const streamOrg = await organization(appUrl, 'Bench streams');
        const agentServer = await HoldingAgent.start();
        closeFirst(() => agentServer.close());
        const agent = await postJson<{ id: string }>(
          appUrl,
          '/v1/agents',
          { name: 'Bench holder', type: 'http', config: { url: agentServer.url } },
          streamOrg.key,
        );
        const results = [];
        for (const subscribers of [1, SUBSCRIBERS]) {
          const clients = await connectClients(appUrl, agent.id, streamOrg.key, subscribers);
          const task = await postJson<TaskView>(
            appUrl,
            '/v1/tasks',
            { instruction: `stream with ${subscribers}`, agent_type: 'http', agent_id: agent.id },
            streamOrg.key,
          );
          const token = await agentServer.tokenOf(task.id);
          const streams = clients.map((client) =>
            countProgress(client.resubscribeTask({ tenant: '', id: task.id })),
          );
          // Every stream has shown the task (its first event) before any event is posted and counted.
          await Promise.all(streams.map((stream) => stream.opened));
          const before = await queries();
          for (let i = 0; i < STREAM_EVENTS; i++) {
            await postJson(
              appUrl,
              `/v1/tasks/${task.id}/events`,
              { type: 'progress', data: { percent: i % 100 } },
              token,
            );
          }
          await Promise.all(streams.map((stream) => stream.progressSeen(STREAM_EVENTS)));
          const after = await queries();
          agentServer.release(task.id);
          await Promise.all(streams.map((stream) => stream.ended));
          results.push({
            subscribers,
            perEvent: (after.total - before.total) / STREAM_EVENTS,
            taskEventsPerEvent: (after.taskEvents - before.taskEvents) / STREAM_EVENTS,
          });
        }
        return results;
      }
    },
  );
}

function report(
  tasks: Record<Side, Sample[]> | undefined,
  streams: { subscribers: number; perEvent: number; taskEventsPerEvent: number }[] | undefined,
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
      `medians over the rounds; A2A: the SDK's client (JSON-RPC, 1.0), one per worker; REST: fetch`,
  );
  let allMet = true;
  if (tasks) {
    const ratios = tasks.a2a.map((sample, round) => sample.rps / tasks.rest[round].rps);
    const ratio = median(ratios);
    const met = ratio >= GOAL;
    allMet &&= met;
    const rate = (side: Side) => median(tasks[side].map((s) => s.rps)).toFixed(0);
    const cpu = (side: Side) => median(tasks[side].map((s) => s.cpu)).toFixed(0);
    const clientCpu = (side: Side) => median(tasks[side].map((s) => s.clientCpu)).toFixed(0);
    const rounds = (side: Side) => tasks[side].map((s) => s.rps.toFixed(0)).join(', ');
    const line = (label: string, side: Side) =>
      console.log(
        `  ${label.padEnd(46)} ${rate(side).padStart(6)}/s  server ${cpu(side).padStart(5)} µs, ` +
          `clients ${clientCpu(side).padStart(5)} µs each  (rounds ${rounds(side)})`,
      );
    console.log(`\n1. echo tasks to their end, ${CLIENTS} clients each side`);
    line('SendMessage (blocking)', 'a2a');
    line('POST /v1/tasks + GET /v1/tasks/{id}?wait=30', 'rest');
    console.log(
      `  A2A / REST: median of paired ratios ${ratio.toFixed(2)} (rounds ${Math.min(...ratios).toFixed(2)}..` +
        `${Math.max(...ratios).toFixed(2)}); goal >= ${GOAL}: ${met ? 'met' : 'NOT met'}`,
    );
  }
  if (streams) {
    console.log(`\n2. SubscribeToTask streams of one running task, ${STREAM_EVENTS} progress events posted`);
    for (const row of streams) {
      console.log(
        `  ${String(row.subscribers).padStart(3)} subscriber(s): ${row.perEvent.toFixed(2)} SQL statements per event in all ` +
          `(${row.taskEventsPerEvent.toFixed(2)} naming task_events; the posts' own included)`,
      );
    }
    const [one, many] = streams;
    // Within one statement per event of each other: one read per event for every stream, not one each.
    const met = many.taskEventsPerEvent - one.taskEventsPerEvent < 1;
    allMet &&= met;
    console.log(`  no statement per event per subscriber: ${met ? 'met' : 'NOT met'}`);
  }
  console.log(`\nissue 46 goals${ONLY ? ` (${ONLY} only)` : ''}: ${allMet ? 'all met' : 'NOT all met'}`);
}

/** A stream's progress updates counted: opened at its first event (the task), ended with the stream. */
function countProgress(stream: AsyncGenerator<unknown>) {
  let progress = 0;
  let opened!: () => void;
  const waiters: { count: number; resolve: () => void }[] = [];
  const openedPromise = new Promise<void>((resolve) => (opened = resolve));
  const ended = (async () => {
    for await (const event of stream) {
      opened();
      const payload = (event as { payload?: { $case: string; value: { status?: { message?: unknown } } } })
        .payload;
      if (payload?.$case === 'statusUpdate' && payload.value.status?.message !== undefined) progress++;
      for (const waiter of waiters.filter((w) => progress >= w.count)) waiter.resolve();
    }
  })();
  return {
    opened: openedPromise,
    ended,
    progressSeen: (count: number) =>
      progress >= count
        ? Promise.resolve()
        : new Promise<void>((resolve) => waiters.push({ count, resolve })),
  };
}

/** An http agent on loopback that holds each run until the bench releases it, handing over its task token. */
class HoldingAgent {
  private readonly tokens = new Map<string, (token: string) => void>();
  private readonly known = new Map<string, string>();
  private readonly holds = new Map<string, () => void>();

  private constructor(
    private readonly server: ReturnType<typeof createServer>,
    readonly url: string,
  ) {}

  static async start(): Promise<HoldingAgent> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const agent = new HoldingAgent(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}/run`);
    // No request comes before its URL is known: the handler is in place before any agent names it.
    server.on('request', (req: IncomingMessage, res: ServerResponse) => void agent.answer(req, res));
    return agent;
  }

  tokenOf(taskId: string): Promise<string> {
    const known = this.known.get(taskId);
    return known ? Promise.resolve(known) : new Promise((resolve) => this.tokens.set(taskId, resolve));
  }

  release(taskId: string): void {
    this.holds.get(taskId)?.();
  }

  close(): Promise<void> {
    for (const release of this.holds.values()) release();
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private async answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const { task_id: taskId } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { task_id: string };
    const token = req.headers['x-gatehouse-task-token'] as string;
    this.known.set(taskId, token);
    this.tokens.get(taskId)?.(token);
    await new Promise<void>((resolve) => this.holds.set(taskId, resolve));
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ done: true }));
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
