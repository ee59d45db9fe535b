import { AgentRunSlots, maxConcurrencyOf } from './agent-run-slots';

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('AgentRunSlots', () => {
  it('lets `cap` runs of an agent in at once, the next when one ends, in arrival order', async () => {
    const slots = new AgentRunSlots();
    const signal = new AbortController().signal;
    const first = await slots.acquire('a', 2, signal);
    await slots.acquire('a', 2, signal);
    const order: string[] = [];
    void slots.acquire('a', 2, signal).then(() => order.push('third'));
    void slots.acquire('a', 2, signal).then(() => order.push('fourth'));
    await settle();
    expect(order).toEqual([]);
    expect(slots.atCap()).toEqual(['a']);

    first();
    first(); // a second call gives back nothing more
    await settle();
    expect(order).toEqual(['third']);
    expect(slots.atCap()).toEqual(['a']);
  });

  it('keeps agents apart, and forgets an agent with nothing running', async () => {
    const slots = new AgentRunSlots();
    const signal = new AbortController().signal;
    const a = await slots.acquire('a', 1, signal);
    const b = await slots.acquire('b', 3, signal);
    expect(slots.atCap()).toEqual(['a']);
    a();
    b();
    expect(slots.atCap()).toEqual([]);
  });

  it('ends the wait of an aborted run without taking a slot', async () => {
    const slots = new AgentRunSlots();
    const running = await slots.acquire('a', 1, new AbortController().signal);
    const controller = new AbortController();
    const waiting = slots.acquire('a', 1, controller.signal);
    controller.abort(new Error('cancelled'));
    await expect(waiting).rejects.toThrow('cancelled');

    running();
    // The slot is free again: the aborted run did not take it.
    const next = await slots.acquire('a', 1, new AbortController().signal);
    expect(slots.atCap()).toEqual(['a']);
    next();
    expect(slots.atCap()).toEqual([]);
  });

  it('admits waiting runs at once when the cap is raised', async () => {
    const slots = new AgentRunSlots();
    const signal = new AbortController().signal;
    await slots.acquire('a', 1, signal);
    let admitted = false;
    void slots.acquire('a', 1, signal).then(() => (admitted = true));
    await settle();
    expect(admitted).toBe(false);
    await slots.acquire('a', 3, signal);
    await settle();
    expect(admitted).toBe(true);
  });

  it('reads max_concurrency from an agent config, only as a positive integer', () => {
    expect(maxConcurrencyOf({ url: 'x', max_concurrency: 5 })).toBe(5);
    expect(maxConcurrencyOf({ url: 'x' })).toBeUndefined();
    expect(maxConcurrencyOf({ max_concurrency: 0 })).toBeUndefined();
    expect(maxConcurrencyOf({ max_concurrency: '5' })).toBeUndefined();
    expect(maxConcurrencyOf(null)).toBeUndefined();
  });
});
