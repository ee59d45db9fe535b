import type { AgentRunner } from './agent-runner';
import { AGENT_TYPE_NAME, AgentRunners, builtInAgentId } from './agent-runner';

const runner = (type: string, names: string[] = []): AgentRunner => ({
  type,
  needsAgent: false,
  builtInAgents: names.map((name) => ({ id: builtInAgentId(name), name, description: null })),
  validateConfig: async () => undefined,
  run: async () => undefined,
});

describe('built-in agents', () => {
  it("gives Echo the id the echo agent has always had, and every name an id of an agent id's shape", () => {
    expect(builtInAgentId('Echo')).toBe('agent_builtinEcho00000000000');
    expect(builtInAgentId('Summariser2')).toMatch(/^agent_[0-9A-Za-z]{22}$/);
  });

  it('refuses a name that would not fit, is not base62, or ends in the padding digit', () => {
    for (const name of ['', 'A'.repeat(16), 'Re-verse', 'Echo0']) {
      expect(() => builtInAgentId(name)).toThrow('built-in agent name');
    }
  });

  it('lists the runners’ built-in agents by type, whatever the order they registered in', () => {
    const runners = new AgentRunners();
    runners.register(runner('zulu', ['Zulu']));
    runners.register(runner('alpha', ['AlphaOne', 'AlphaTwo']));
    runners.register(runner('plain'));
    expect(runners.builtInAgents().map(({ type, name }) => `${type}/${name}`)).toEqual([
      'alpha/AlphaOne',
      'alpha/AlphaTwo',
      'zulu/Zulu',
    ]);
    expect(runners.builtInAgent(builtInAgentId('Zulu'))).toMatchObject({ type: 'zulu', name: 'Zulu' });
    expect(runners.builtInAgent(builtInAgentId('Nobody'))).toBeUndefined();
  });

  it('refuses a built-in agent id taken by another runner, or not made by builtInAgentId, and registers nothing then', () => {
    const runners = new AgentRunners();
    runners.register(runner('first', ['Shared']));
    expect(() => runners.register(runner('second', ['Shared']))).toThrow('declared twice');
    expect(() =>
      runners.register({
        ...runner('third'),
        builtInAgents: [{ id: 'agent_x', name: 'X', description: null }],
      }),
    ).toThrow('is not builtInAgentId');
    expect(runners.types()).toEqual(['first']);
  });
});

describe('agent type names', () => {
  it('refuses at registration a type POST /v1/tasks and POST /v1/agents could not name, naming it', () => {
    const runners = new AgentRunners();
    for (const type of ['openai-chat', 'OpenAI', '1st', '_x', '', 'a'.repeat(51), 'model agent']) {
      expect(() => runners.register(runner(type))).toThrow(`agent type "${type}" is not a valid type name`);
    }
    expect(runners.types()).toEqual([]);
  });

  it('registers every name the rule allows, the one the agent DTO checks too', () => {
    const runners = new AgentRunners();
    for (const type of ['openai_chat', 'a', `m${'0'.repeat(49)}`, 'x_1']) runners.register(runner(type));
    expect(runners.types()).toEqual(['a', `m${'0'.repeat(49)}`, 'openai_chat', 'x_1']);
    expect(AGENT_TYPE_NAME.test('openai-chat')).toBe(false);
  });
});

describe('built-in agent pricing', () => {
  const priced = (pricing: unknown, defaultMaxCredits?: number): AgentRunner => ({
    ...runner('priced'),
    builtInAgents: [
      {
        id: builtInAgentId('Priced'),
        name: 'Priced',
        description: null,
        pricing: pricing as never,
        defaultMaxCredits,
      },
    ],
  });

  it('keeps the pricing and default reservation a built-in agent declares', () => {
    const runners = new AgentRunners();
    const pricing = { credits_per_1k_input_tokens: 0.5, credits_per_1k_output_tokens: 2 };
    runners.register(priced(pricing, 10));
    expect(runners.builtInAgent(builtInAgentId('Priced'))).toMatchObject({ pricing, defaultMaxCredits: 10 });
  });

  it.each([
    [{ credits_per_1k_input_tokens: -1, credits_per_1k_output_tokens: 0 }, undefined, 'pricing'],
    [{ credits_per_1k_input_tokens: 1 }, undefined, 'pricing'],
    [{ credits_per_1k_input_tokens: Number.NaN, credits_per_1k_output_tokens: 0 }, undefined, 'pricing'],
    [undefined, 1.5, 'defaultMaxCredits'],
    [undefined, -1, 'defaultMaxCredits'],
  ])('refuses pricing %j with default_max_credits %j as POST /v1/agents would', (pricing, reserve, named) => {
    const runners = new AgentRunners();
    expect(() => runners.register(priced(pricing, reserve))).toThrow(
      new RegExp(`built-in agent "Priced" \\(priced\\): ${named}`),
    );
    expect(runners.types()).toEqual([]);
  });
});
