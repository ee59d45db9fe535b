import { WindowCounters } from './memory-window-storage';

describe('WindowCounters', () => {
  it('keeps a counter per throttler name and key, apart for the same key under two names', () => {
    const counters = new WindowCounters<number>();
    counters.set('default', 'key_a', 1);
    counters.set('hour', 'key_a', 2);
    counters.set('default', 'key_b', 3);
    expect([
      counters.get('default', 'key_a'),
      counters.get('hour', 'key_a'),
      counters.get('default', 'key_b'),
      counters.get('hour', 'key_b'),
      counters.get('day', 'key_a'),
    ]).toEqual([1, 2, 3, undefined, undefined]);
    counters.set('default', 'key_a', 4);
    expect(counters.get('default', 'key_a')).toBe(4);
  });

  it('drops exactly the counters the sweep says are over, under every name', () => {
    const counters = new WindowCounters<number>();
    for (const name of ['default', 'hour']) for (let i = 0; i < 10; i++) counters.set(name, `key_${i}`, i);
    counters.sweep((value) => value % 3 === 0);
    for (const name of ['default', 'hour'])
      for (let i = 0; i < 10; i++) expect(counters.get(name, `key_${i}`)).toBe(i % 3 === 0 ? undefined : i);
  });
});
