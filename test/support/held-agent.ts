import type TestAgent from 'supertest/lib/agent';
import { FakeAgentServer, gate } from './agent-server';
import type { SignedUpOrganization } from './factories';
import { startTestApp, TestApp } from './test-app';

type Auth = SignedUpOrganization['auth'];

/** Queues a task (the echo agent unless `body` says otherwise) and returns its id. */
export async function queueTask(
  http: TestAgent,
  auth: Auth,
  body: Record<string, unknown> = {},
): Promise<string> {
  const res = await http
    .post('/v1/tasks')
    .set(auth)
    .send({ instruction: 'a task', agent_type: 'echo', ...body });
  if (res.status !== 202) throw new Error(`queueing a task answered ${res.status}: ${res.text}`);
  return res.body.id as string;
}

/**
 * An instance with one task worker and a fake http agent on loopback whose answer (`answer`) waits for
 * `release()`: a test sees the task running, then ends it when it chooses.
 */
export async function startWithHeldAgent(answer: unknown) {
  const agent = await FakeAgentServer.start();
  const held = gate();
  const url = agent.on('/held', async () => {
    await held.promise;
    return { status: 200, json: answer };
  });
  const t: TestApp = await startTestApp({
    env: { WORKER_CONCURRENCY: '1', WORKER_POLL_MS: '50', ALLOW_PRIVATE_NETWORK_TARGETS: 'true' },
  });
  return {
    t,
    release: held.release,
    /** Queues a task for a new http agent of `auth`'s organization that calls the held agent. */
    async queueHeldTask(auth: Auth): Promise<string> {
      const created = await t.http
        .post('/v1/agents')
        .set(auth)
        .send({ name: 'Held', type: 'http', config: { url } });
      if (created.status !== 201)
        throw new Error(`creating an agent answered ${created.status}: ${created.text}`);
      return queueTask(t.http, auth, { agent_type: 'http', agent_id: created.body.id });
    },
    async close(): Promise<void> {
      held.release();
      await agent.close();
      await t.close();
    },
  };
}
