import type { Principal } from '../../src/access/principal';
import { AgentsModule } from '../../src/agents/agents.module';
import { AgentsRepository } from '../../src/agents/agents.repository';
import { AgentsService, ECHO_AGENT } from '../../src/agents/agents.service';
import { ServiceContext, startFeatureContext } from '../support/feature-context';
import { PRIVATE_TARGETS, PUBLIC_URL } from '../support/outbound-targets';
import { nextMillisecond } from '../support/pagination';
import { userOfNewOrganization } from '../support/principals';

/** AgentsService on a real database: definitions scoped to an organization, configs checked by type. */
describe('agents (service level)', () => {
  let context: ServiceContext;
  let agents: AgentsService;

  beforeAll(async () => {
    // Private targets allowed, as an operator with agents on its own network configures it.
    context = await startFeatureContext({
      imports: [AgentsModule],
      env: { ALLOW_PRIVATE_NETWORK_TARGETS: 'true' },
    });
    agents = context.get(AgentsService);
  });
  afterAll(() => context?.close());

  const echo = (principal: Principal, name: string) => agents.create(principal, { name, type: 'echo' });

  it('stores an agent with its defaults, and changes only the fields an update names', async () => {
    const a = userOfNewOrganization();
    const plain = await echo(a, 'plain');
    expect(plain).toMatchObject({ organizationId: a.organizationId, description: null, config: {} });

    const remote = await agents.create(a, {
      name: 'Summariser',
      type: 'http',
      description: 'first',
      config: { url: 'http://127.0.0.1:1/summarise', timeout_ms: 5000 },
    });
    await agents.update(a, remote.id, { description: 'second' });
    expect(await agents.get(a, remote.id)).toMatchObject({
      name: 'Summariser',
      description: 'second',
      config: { url: 'http://127.0.0.1:1/summarise', timeout_ms: 5000 },
    });
    await agents.update(a, remote.id, { config: { url: 'http://127.0.0.1:1/v2' }, name: 'Summariser 2' });
    expect(await agents.get(a, remote.id)).toMatchObject({
      name: 'Summariser 2',
      description: 'second',
      config: { url: 'http://127.0.0.1:1/v2' },
    });
  });

  it("hides an organization's agent from every other organization: get, update, delete and list", async () => {
    const a = userOfNewOrganization();
    const b = userOfNewOrganization();
    const agent = await echo(a, 'private');

    await expect(agents.get(b, agent.id)).rejects.toMatchObject({ code: 'not_found' });
    await expect(agents.update(b, agent.id, { name: 'stolen' })).rejects.toMatchObject({ code: 'not_found' });
    await expect(agents.delete(b, agent.id)).rejects.toMatchObject({ code: 'not_found' });
    expect((await agents.list(b, {})).data).toEqual([ECHO_AGENT]);
    expect(await agents.findInOrganization(b.organizationId, agent.id)).toBeNull();

    expect((await agents.get(a, agent.id)).name).toBe('private');
    expect((await agents.list(a, {})).data.map((listed) => listed.id)).toEqual([ECHO_AGENT.id, agent.id]);
  });

  it('answers not_found for an id that is not an agent id, and for a deleted agent', async () => {
    const a = userOfNewOrganization();
    const agent = await echo(a, 'doomed');
    await agents.delete(a, agent.id);
    for (const id of [agent.id, 'task_0000000000000000000000', 'nope', ECHO_AGENT.id]) {
      await expect(agents.get(a, id)).rejects.toMatchObject({ code: 'not_found' });
    }
    await expect(agents.delete(a, agent.id)).rejects.toMatchObject({ code: 'not_found' });
  });

  it("reads a new task's agents of one turn in one statement, within the organization, and sees a deletion next", async () => {
    const a = userOfNewOrganization();
    const b = userOfNewOrganization();
    const [first, second] = [await echo(a, 'first'), await echo(a, 'second')];
    const reads = jest.spyOn(context.get(AgentsRepository), 'findAmong');
    try {
      const answers = await Promise.allSettled([
        agents.getForNewTask(a, first.id),
        agents.getForNewTask(a, first.id),
        agents.getForNewTask(a, second.id),
        agents.getForNewTask(b, first.id),
        agents.getForNewTask(a, 'nope'),
      ]);
      expect(reads).toHaveBeenCalledTimes(1);
      // Each distinct (organization, id) pair once; 'nope' is no agent id and is never asked.
      expect(reads.mock.calls[0][0]).toEqual([
        { organizationId: a.organizationId, id: first.id },
        { organizationId: a.organizationId, id: second.id },
        { organizationId: b.organizationId, id: first.id },
      ]);
      expect(
        answers.map((answer) => (answer.status === 'fulfilled' ? answer.value.name : answer.reason.code)),
      ).toEqual(['first', 'first', 'second', 'not_found', 'not_found']);

      await agents.delete(a, first.id);
      await expect(agents.getForNewTask(a, first.id)).rejects.toMatchObject({ code: 'not_found' });
      expect(reads).toHaveBeenCalledTimes(2);
    } finally {
      reads.mockRestore();
    }
  });

  it('lists the built-in echo agent first on the first page only, then its own agents newest first', async () => {
    const a = userOfNewOrganization();
    const created: string[] = [];
    for (const name of ['first', 'second', 'third']) {
      created.push((await echo(a, name)).id);
      await nextMillisecond();
    }
    const newestFirst = [...created].reverse();

    const first = await agents.list(a, { limit: 2 });
    // The limit counts the organization's agents; the built-in one comes on top of them.
    expect(first.data.map((agent) => agent.id)).toEqual([ECHO_AGENT.id, ...newestFirst.slice(0, 2)]);
    expect(first.next_cursor).toEqual(expect.any(String));
    const second = await agents.list(a, { limit: 2, cursor: first.next_cursor! });
    expect(second.data.map((agent) => agent.id)).toEqual(newestFirst.slice(2));
    expect(second.next_cursor).toBeNull();
  });

  it.each([
    ['an unknown type', 'unknown_agent_type', 'type', { type: 'telepathy' }],
    ['an http agent without config', 'invalid_config', 'config', { type: 'http' }],
    ['an http agent without url', 'invalid_config', 'config', { type: 'http', config: {} }],
    ['a url that is not a string', 'invalid_config', 'config', { type: 'http', config: { url: 42 } }],
    [
      'an unknown config key',
      'invalid_config',
      'config',
      { type: 'http', config: { url: PUBLIC_URL, extra: 1 } },
    ],
    [
      'a timeout out of range',
      'invalid_config',
      'config',
      { type: 'http', config: { url: PUBLIC_URL, timeout_ms: 5 } },
    ],
    [
      'a url that is not http(s)',
      'target_not_allowed',
      'url',
      { type: 'http', config: { url: 'ftp://agents.example.test/run' } },
    ],
    [
      'credentials in the url',
      'target_not_allowed',
      'url',
      { type: 'http', config: { url: 'http://user:pass@127.0.0.1:1/' } },
    ],
    ['config on the echo agent', 'invalid_config', 'config', { type: 'echo', config: { url: PUBLIC_URL } }],
  ])('refuses %s (%s on %s) and stores nothing', async (_label, code, field, body) => {
    const a = userOfNewOrganization();
    await expect(agents.create(a, { name: 'invalid', ...body })).rejects.toMatchObject({
      code,
      errors: [expect.objectContaining({ field })],
    });
    expect((await agents.list(a, {})).data).toEqual([ECHO_AGENT]);
  });

  it("checks an update's config against the agent's type, and keeps the old one when refused", async () => {
    const a = userOfNewOrganization();
    const remote = await agents.create(a, { name: 'remote', type: 'http', config: { url: PUBLIC_URL } });
    await expect(
      agents.update(a, remote.id, { name: 'renamed', config: { url: 'ftp://files.example.test/' } }),
    ).rejects.toMatchObject({ code: 'target_not_allowed' });
    const plain = await echo(a, 'plain');
    await expect(agents.update(a, plain.id, { config: { url: PUBLIC_URL } })).rejects.toMatchObject({
      code: 'invalid_config',
    });
    expect(await agents.get(a, remote.id)).toMatchObject({ name: 'remote', config: { url: PUBLIC_URL } });
    expect((await agents.get(a, plain.id)).config).toEqual({});
  });

  describe('with private network targets refused (the default)', () => {
    let strict: ServiceContext;
    beforeAll(async () => {
      strict = await startFeatureContext({ imports: [AgentsModule] });
    });
    afterAll(() => strict?.close());

    it.each(PRIVATE_TARGETS)(
      'refuses an http agent at %s (target_not_allowed) and stores nothing',
      async (_label, url) => {
        const a = userOfNewOrganization();
        const service = strict.get(AgentsService);
        await expect(
          service.create(a, { name: 'inside', type: 'http', config: { url } }),
        ).rejects.toMatchObject({
          code: 'target_not_allowed',
          errors: [expect.objectContaining({ field: 'url' })],
        });
        expect((await service.list(a, {})).data).toEqual([ECHO_AGENT]);
      },
    );

    it('accepts a public address', async () => {
      const a = userOfNewOrganization();
      const agent = await strict.get(AgentsService).create(a, {
        name: 'outside',
        type: 'http',
        config: { url: PUBLIC_URL },
      });
      expect(agent.config).toEqual({ url: PUBLIC_URL });
    });
  });
});
