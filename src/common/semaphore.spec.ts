import { Semaphore } from './semaphore';

describe('Semaphore', () => {
  it('runs at most `size` calls at once, the others in arrival order, and frees a slot on failure', async () => {
    const semaphore = new Semaphore(2);
    let inFlight = 0;
    let peak = 0;
    const order: number[] = [];
    const call = (i: number, fail = false) =>
      semaphore.use(async () => {
        inFlight++;
        peak = Math.max(peak, inFlight);
        await new Promise((resolve) => setTimeout(resolve, 5));
        inFlight--;
        order.push(i);
        if (fail) throw new Error(`call ${i} failed`);
        return i;
      });
    const results = await Promise.allSettled([call(1, true), call(2), call(3), call(4), call(5)]);
    expect(peak).toBe(2);
    expect(order).toEqual([1, 2, 3, 4, 5]);
    expect(results.map((r) => r.status)).toEqual([
      'rejected',
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'fulfilled',
    ]);
  });

  it('refuses a size below one', () => {
    expect(() => new Semaphore(0)).toThrow();
  });
});
