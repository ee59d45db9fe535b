import { Controller, Get, Logger, Module } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import { rmSync } from 'node:fs';
import { DataSource } from 'typeorm';
import { AccessPolicies } from '../src/access/access-policy';
import { AgentRunners } from '../src/agents/agent-runner';
import { TaskQueueRepository } from '../src/tasks/task-queue.repository';
import { EXAMPLE_EXTENSIONS } from '../examples/extensions';
import { DatasetsService } from '../examples/extensions/datasets/datasets.service';
import { ProjectsService } from '../examples/extensions/projects/projects.service';
import { MaintenanceWindowPolicy } from '../examples/extensions/maintenance-window/maintenance-window.policy';
import { reverseAgentExtension } from '../examples/extensions/reverse-agent/reverse-agent.extension';
import { expectProblem, signUpOrganization } from './support/factories';
import { pollUntil } from './support/keys';
import {
  dropTestDatabase,
  ServiceContext,
  startServiceContext,
  startTestApp,
  TestApp,
} from './support/test-app';

/**
 * Extensions (src/extension.ts): one list that the API and the worker both load, each process the
 * parts it runs. The examples' own tests (examples/extensions/<name>/) show what each kind of extension
 * does; this suite shows the list: all four together in both processes, what happens to tasks of a type
 * a process lacks, and that a route of an extension which declares nothing fails closed.
 */

const RUNS_TASKS = { WORKER_CONCURRENCY: '1', WORKER_POLL_MS: '50' };

/** A platform team's route that forgot its declaration. */
@Controller('v1/forgotten')
class ForgottenController {
  @Get()
  read() {
    return { leaked: true };
  }
}

@Module({ controllers: [ForgottenController] })
class ForgetfulModule {}

describe('extensions: one list, loaded by the API and the worker', () => {
  describe('the four examples together', () => {
    let api: TestApp;
    let worker: ServiceContext;
    beforeAll(async () => {
      // One after the other: on PGlite each instance runs its engine on this file's one thread, and two
      // starting together on a loaded machine kept each other's first connection past its deadline.
      api = await startTestApp({ extensions: EXAMPLE_EXTENSIONS, imports: [ForgetfulModule] });
      worker = await startServiceContext({ root: 'worker', extensions: EXAMPLE_EXTENSIONS });
    });
    afterAll(async () => {
      await Promise.all([api?.close(), worker?.close()]);
    });

    it('the API loads both parts of each: runners, routes, policies', async () => {
      expect(api.app.get(AgentRunners).types()).toEqual(['echo', 'http', 'llm', 'reverse']);
      expect(api.app.get(AccessPolicies).inOrder.map(({ name }) => name)).toEqual([
        'MaintenanceWindowPolicy',
      ]);
      const document = (await api.http.get('/openapi.json').expect(200)).body;
      expect(Object.keys(document.paths)).toEqual(
        expect.arrayContaining(['/v1/datasets', '/v1/datasets/{id}', '/v1/projects', '/v1/projects/{id}']),
      );
    });

    it('the worker loads the shared parts only: the runner, the service and its table, no route or policy', async () => {
      expect(worker.get(AgentRunners, { strict: false }).types()).toEqual(['echo', 'http', 'llm', 'reverse']);
      expect(worker.get(DatasetsService, { strict: false })).toBeInstanceOf(DatasetsService);
      expect(worker.get(ProjectsService, { strict: false })).toBeInstanceOf(ProjectsService);
      // The worker ran the extensions' migrations on its database too.
      for (const table of ['datasets', 'projects'])
        expect(await worker.get(DataSource).query(`SELECT count(*)::int AS n FROM ${table}`)).toEqual([
          { n: 0 },
        ]);
      const controllers = [...worker.get(ModulesContainer).values()].flatMap((module) => [
        ...module.controllers.keys(),
      ]);
      expect(controllers).toEqual([]);
      expect(() => worker.get(MaintenanceWindowPolicy, { strict: false })).toThrow();
    });

    it('refuses, for everyone, a route of an added module that declares no permission', async () => {
      const org = await signUpOrganization(api.http, 'Forgetful');
      expectProblem(await api.http.get('/v1/forgotten').set(org.auth), 403, 'forbidden');
      expectProblem(await api.http.get('/v1/forgotten'), 401, 'missing_credentials');
    });
  });

  describe('tasks of an agent type a process has no runner for', () => {
    let warn: jest.SpyInstance;
    beforeEach(() => (warn = jest.spyOn(Logger.prototype, 'warn')));
    afterEach(() => warn.mockRestore());
    const warnings = () => warn.mock.calls.map(([message]) => String(message));

    it('are left queued and named at start by a worker without the type, then run by one with it', async () => {
      // The API that queued it has the extension (and no workers); then it stops, its database kept.
      const api = await startTestApp({ extensions: [reverseAgentExtension] });
      const org = await signUpOrganization(api.http, 'Left over');
      const queue = async (agentType: string): Promise<string> =>
        (
          await api.http
            .post('/v1/tasks')
            .set(org.auth)
            .send({ instruction: 'abc', agent_type: agentType })
            .expect(202)
        ).body.id;
      const reverseTask = await queue('reverse');
      const echoTask = await queue('echo');
      await api.close({ keepData: true });
      const instance = { databaseUrl: api.databaseUrl, dataDir: api.dataDir, env: RUNS_TASKS };
      const statusOf = (context: ServiceContext, id: string) =>
        context
          .get(TaskQueueRepository, { strict: false })
          .findInOrganization(org.organizationId, id)
          .then((task) => task?.status);

      try {
        const without = await startServiceContext({ root: 'worker', core: true, ...instance });
        try {
          // The echo task, queued after it, runs; the reverse one is not taken (nor failed).
          const { value } = await pollUntil(
            () => statusOf(without, echoTask),
            (status) => status === 'succeeded',
          );
          expect(value).toBe('succeeded');
          expect(await statusOf(without, reverseTask)).toBe('queued');
          expect(warnings()).toContainEqual(expect.stringContaining('"reverse" (1 queued)'));
        } finally {
          await without.close();
        }

        warn.mockClear();
        const withType = await startServiceContext({
          root: 'worker',
          extensions: [reverseAgentExtension],
          ...instance,
        });
        try {
          const { value } = await pollUntil(
            () => statusOf(withType, reverseTask),
            (status) => status === 'succeeded' || status === 'failed',
          );
          expect(value).toBe('succeeded');
          expect(warnings().filter((message) => message.includes('reverse'))).toEqual([]);
        } finally {
          await withType.close();
        }
      } finally {
        if (api.databaseUrl) await dropTestDatabase(api.databaseUrl);
        rmSync(api.dataDir, { recursive: true, force: true });
      }
    });
  });
});
