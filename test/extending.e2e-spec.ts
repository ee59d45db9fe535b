import { Body, Controller, Get, Injectable, Module, OnModuleInit, Post } from '@nestjs/common';
import { AccessAttempt, AccessStep, StepOutcome } from '../src/access/access-attempt';
import { AccessDenial, defineAccessDenial } from '../src/access/access-denial';
import { AccessPolicy } from '../src/access/access-policy';
import { Principal } from '../src/access/principal';
import { RequirePermissions } from '../src/access/route-access.decorators';
import { AgentRunContext, AgentRunner, AgentRunners } from '../src/agents/agent-runner';
import { AgentsModule } from '../src/agents/agents.module';
import { expectProblem, signUpOrganization, SignedUpOrganization } from './support/factories';
import { createKey, pollUntil } from './support/keys';
import { undocumentedDenialCodes } from './support/readme-errors';
import { startTestApp, TestApp } from './support/test-app';

/**
 * The README's "Extending" recipes, each done here by a module of a platform team's own, booted beside
 * the real AppModule: an agent type, routes for a resource of the permission vocabulary, and a policy
 * step in the key check.
 */

/** Recipe 1: an agent type. */
@Injectable()
class ReverseRunner implements AgentRunner, OnModuleInit {
  readonly type = 'reverse';
  readonly needsAgent = false;
  constructor(private readonly runners: AgentRunners) {}
  onModuleInit(): void {
    this.runners.register(this);
  }
  async validateConfig(): Promise<void> {}
  async run({ task }: AgentRunContext): Promise<unknown> {
    return { output: [...task.instruction].reverse().join('') };
  }
}

/** Recipe 2: routes for a resource (`workflows` is in the vocabulary; no built-in route serves it). */
@Controller('v1/workflows')
class WorkflowsController {
  @Get()
  @RequirePermissions('workflows:read')
  list(@Principal() principal: Principal) {
    return { data: [], organization_id: principal.organizationId };
  }

  @Post()
  @RequirePermissions('workflows:create')
  create(@Body() body: Record<string, unknown>) {
    return { created: true, fields: Object.keys(body ?? {}) };
  }

  /** Declares nothing: refused for everyone, so a forgotten declaration fails closed. */
  @Get('undeclared')
  undeclared() {
    return { leaked: true };
  }
}

/** Recipe 3: a policy step of the key check, with its own refusal code. */
const maintenance = { on: false };
defineAccessDenial('maintenance_window', { status: 503, audited: false });

@AccessPolicy({ order: 10 })
@Injectable()
class MaintenanceWindowPolicy implements AccessStep {
  async check({ request }: AccessAttempt): Promise<StepOutcome> {
    if (!maintenance.on || request.method === 'GET') return undefined;
    return new AccessDenial('maintenance_window', 'Writes are paused for maintenance.', {
      'Retry-After': '60',
    });
  }
}

@Module({
  imports: [AgentsModule],
  controllers: [WorkflowsController],
  providers: [ReverseRunner, MaintenanceWindowPolicy],
})
class PlatformTeamModule {}

describe('Extending Gatehouse (README recipes)', () => {
  let t: TestApp;
  let org: SignedUpOrganization;
  beforeAll(async () => {
    t = await startTestApp({
      imports: [PlatformTeamModule],
      env: { WORKER_CONCURRENCY: '1', WORKER_POLL_MS: '50' },
    });
    org = await signUpOrganization(t.http, 'Platform team');
  });
  afterAll(() => t.close());
  afterEach(() => (maintenance.on = false));

  it('runs tasks through an added agent type', async () => {
    const key = await createKey(t.http, org.auth, { role: 'developer', type: 'service' });
    const created = await t.http
      .post('/v1/tasks')
      .set(key.auth)
      .send({ instruction: 'gatehouse', agent_type: 'reverse' })
      .expect(202);
    const { value } = await pollUntil(
      () => t.http.get(`/v1/tasks/${created.body.id}`).set(key.auth),
      (res) => res.body.status === 'succeeded',
    );
    expect(value.body.result).toEqual({ output: 'esuohetag' });
    // And the OpenAPI document (so a generated client) lists it beside the built-in types.
    const document = (await t.http.get('/openapi.json').expect(200)).body;
    expect(document.components.schemas.CreateTaskDto.properties.agent_type.enum).toEqual(
      expect.arrayContaining(['echo', 'http', 'reverse']),
    );
  });

  it('guards added routes with their declared permissions, and refuses undeclared ones', async () => {
    const viewer = await createKey(t.http, org.auth, { role: 'viewer', type: 'service' });
    const developer = await createKey(t.http, org.auth, { role: 'developer', type: 'service' });

    const listed = await t.http.get('/v1/workflows').set(viewer.auth).expect(200);
    expect(listed.body).toEqual({ data: [], organization_id: org.organizationId });
    expectProblem(await t.http.post('/v1/workflows').set(viewer.auth).send({ name: 'x' }), 403, 'forbidden');
    await t.http.post('/v1/workflows').set(developer.auth).send({ name: 'x' }).expect(201);
    expectProblem(await t.http.get('/v1/workflows'), 401, 'missing_credentials');
    expectProblem(await t.http.get('/v1/workflows/undeclared').set(org.auth), 403, 'forbidden');
  });

  it('runs an added policy after the permission step and before the rate limit', async () => {
    const developer = await createKey(t.http, org.auth, { role: 'developer', type: 'service' });
    const viewer = await createKey(t.http, org.auth, { role: 'viewer', type: 'service' });
    maintenance.on = true;

    const refused = await t.http.post('/v1/workflows').set(developer.auth).send({});
    expectProblem(refused, 503, 'maintenance_window');
    expect(refused.headers['retry-after']).toBe('60');
    // Refused before the rate limit: no budget was spent or reported.
    expect(refused.headers['x-ratelimit-remaining']).toBeUndefined();
    // The permission step comes first: a viewer is refused for the permission, not the window.
    expectProblem(await t.http.post('/v1/workflows').set(viewer.auth).send({}), 403, 'forbidden');
    // Reads pass the policy and reach the rate limit.
    const read = await t.http.get('/v1/workflows').set(developer.auth).expect(200);
    expect(read.headers['x-ratelimit-remaining']).toEqual(expect.stringMatching(/^\d+$/));
  });

  it("documents every refusal code, the added policy's included, in README's Errors table", () => {
    expect(undocumentedDenialCodes()).toEqual([]);
  });
});
