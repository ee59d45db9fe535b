import type { AgentRunner } from './agent-runner';
import { AgentRunners, builtInAgentId } from './agent-runner';

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
