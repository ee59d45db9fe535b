import type TestAgent from 'supertest/lib/agent';
import { FakeAgentServer, gate, type Gate } from './agent-server';
import { bearer, signUpOrganization } from './factories';
import { sharedSecrets } from './instances';
import { CALLS_LOCAL_TARGETS } from './outbound-targets';
import { startTestApp, type TestApp } from './test-app';
import type { Auth } from './keys';

/** A task an http agent holds: its task token, the headers the agent got, and how to let it answer. */
export interface HeldRun {
  taskId: string;
  token: string;
  tokenAuth: Auth;
  headers: Record<string, unknown>;
  /** Lets the agent answer (the run succeeds with `{done: true}`). */
  release: () => void;
}

interface Started {
  token: string;
  headers: Record<string, unknown>;
}

/**
 * A fake http agent on loopback that holds every run until the test releases it (a run of a task
 * queued another way too, until releaseAll), handing the test the run's task token as soon as the agent
 * has it: a test acts as the agent, with the token, while the
 * task runs. Needs an app with ALLOW_PRIVATE_NETWORK_TARGETS=true.
 */
export class HeldRuns {
  private readonly gates = new Map<string, Gate>();
  /** Calls the agent received before the test asked for them, by task (a worker can be that fast). */
  private readonly unclaimed = new Map<string, Started[]>();
  private readonly waiting = new Map<string, (run: Started) => void>();

  private constructor(
    private readonly server: FakeAgentServer,
    /** The URL to configure as an http agent's `config.url`. */
    readonly url: string,
  ) {}

  static async start(): Promise<HeldRuns> {
    const server = await FakeAgentServer.start();
    const runs = new HeldRuns(server, server.url('/run'));
    server.on('/run', async (request) => {
      const taskId = request.json.task_id as string;
      runs.arrived(taskId, {
        token: request.headers['x-gatehouse-task-token'] as string,
        headers: request.headers,
      });
      // Every run is held, also of tasks the test queued without begin(): releaseAll() lets them go.
      await runs.hold(taskId).promise;
      return { status: 200, json: { done: true } };
    });
    return runs;
  }

  /** Creates an http agent of `auth`'s organization that calls this server; returns its id. */
  async agent(http: TestAgent, auth: Auth, body: Record<string, unknown> = {}): Promise<string> {
    const res = await http
      .post('/v1/agents')
      .set(auth)
      .send({ name: 'Held runner', type: 'http', config: { url: this.url }, ...body });
    if (res.status !== 201) throw new Error(`creating an agent answered ${res.status}: ${res.text}`);
    return res.body.id as string;
  }

  /** Queues a task of `agentId` with `auth` and waits until the agent holds it. */
  async begin(
    http: TestAgent,
    auth: Auth,
    agentId: string,
    body: Record<string, unknown> = {},
  ): Promise<HeldRun> {
    const res = await http
      .post('/v1/tasks')
      .set(auth)
      .send({ instruction: 'work', agent_type: 'http', agent_id: agentId, ...body });
    if (res.status !== 202) throw new Error(`queueing a task answered ${res.status}: ${res.text}`);
    const taskId = res.body.id as string;
    const held = this.hold(taskId);
    const run = await this.nextStart(taskId);
    return { taskId, ...run, tokenAuth: bearer(run.token), release: held.release };
  }

  /** The agent's next call for `taskId` not yet handed to the test (its first, or a new attempt's). */
  nextStart(taskId: string): Promise<Started> {
    const early = this.unclaimed.get(taskId)?.shift();
    if (early) return Promise.resolve(early);
    return new Promise((resolve) => this.waiting.set(taskId, resolve));
  }

  private arrived(taskId: string, run: Started): void {
    const waiter = this.waiting.get(taskId);
    this.waiting.delete(taskId);
    if (waiter) waiter(run);
    else this.unclaimed.set(taskId, [...(this.unclaimed.get(taskId) ?? []), run]);
  }

  /** The gate of a task's run: the same one for the agent's call and for begin(), whichever comes first. */
  private hold(taskId: string): Gate {
    let held = this.gates.get(taskId);
    if (!held) this.gates.set(taskId, (held = gate()));
    return held;
  }

  /** Lets every run held so far answer. */
  releaseAll(): void {
    for (const held of this.gates.values()) held.release();
  }

  async close(): Promise<void> {
    this.releaseAll();
    await this.server.close();
  }
}

/**
 * An instance that runs tasks (four at once, polling every 50 ms, loopback agents allowed), a new
 * organization, and an http agent of it (`agent`: more of its fields) on a HeldRuns server.
 */
export async function startAppWithHeldRuns(agent: Record<string, unknown> = {}) {
  const runs = await HeldRuns.start();
  const t = await startTestApp({ env: { ...CALLS_LOCAL_TARGETS, WORKER_CONCURRENCY: '4' } });
  const org = await signUpOrganization(t.http);
  const agentId = await runs.agent(t.http, org.auth, agent);
  return {
    t,
    runs,
    org,
    agentId,
    async close(): Promise<void> {
      await runs.close();
      await t.close();
    },
  };
}

/**
 * Two API instances on one database (and one Redis when the run has it), signing and hashing alike, with
 * `workers` task workers each; a new organization, and an http agent of it (`agent`: more of its fields)
 * on a HeldRuns server. Needs PostgreSQL (describeWithPostgres).
 */
export async function startTwoInstancesWithHeldRuns(
  workers: { a: number; b: number },
  agent: Record<string, unknown> = {},
) {
  const runs = await HeldRuns.start();
  const env = { ...sharedSecrets(), ...CALLS_LOCAL_TARGETS };
  let a: TestApp | undefined;
  let b: TestApp | undefined;
  const close = async (): Promise<void> => {
    await runs.close();
    await b?.close();
    await a?.close();
  };
  try {
    a = await startTestApp({ env: { ...env, WORKER_CONCURRENCY: String(workers.a) } });
    b = await startTestApp({
      databaseUrl: a.databaseUrl,
      env: { ...env, WORKER_CONCURRENCY: String(workers.b) },
    });
    const org = await signUpOrganization(a.http);
    const agentId = await runs.agent(a.http, org.auth, agent);
    return { a, b, runs, org, agentId, close };
  } catch (error) {
    await close();
    throw error;
  }
}
