import { TickBatch } from './tick-batch';

/** A write that the test ends: each call's items, and a function that answers it. */
function heldWrites() {
  const calls: { items: number[]; answer: () => void }[] = [];
  const write = (items: number[]) =>
    new Promise<number[]>((resolve) =>
      calls.push({ items, answer: () => resolve(items.map((n) => n * 10)) }),
    );
  return { calls, write };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('TickBatch', () => {
  it('writes the calls of one turn together and answers each with its own result', async () => {
    const { calls, write } = heldWrites();
    const batch = new TickBatch(write);
    const answers = Promise.all([batch.add(1), batch.add(2)]);
    await turn();
    expect(calls.map((c) => c.items)).toEqual([[1, 2]]);
    calls[0].answer();
    await expect(answers).resolves.toEqual([10, 20]);
  });

  it('with maxInFlight, gathers the calls made while that many batches are written into the next one', async () => {
    const { calls, write } = heldWrites();
    const batch = new TickBatch(write, 1);
    const first = batch.add(1);
    await turn();
    const later = [batch.add(2), batch.add(3)];
    await turn();
    const last = batch.add(4);
    await turn();
    // One batch in flight: 2, 3 and 4 wait for it, over three turns, and then go together.
    expect(calls.map((c) => c.items)).toEqual([[1]]);
    calls[0].answer();
    await expect(first).resolves.toBe(10);
    await turn();
    expect(calls.map((c) => c.items)).toEqual([[1], [2, 3, 4]]);
    calls[1].answer();
    await expect(Promise.all([...later, last])).resolves.toEqual([20, 30, 40]);
  });

  it('fails every call of a batch whose write failed, and writes the next one', async () => {
    let fail = true;
    const batch = new TickBatch(async (items: number[]) => {
      if (fail) throw new Error('database unavailable');
      return items;
    }, 1);
    const failed = Promise.allSettled([batch.add(1), batch.add(2)]);
    expect((await failed).map((r) => r.status)).toEqual(['rejected', 'rejected']);
    fail = false;
    await expect(batch.add(3)).resolves.toBe(3);
  });
});
