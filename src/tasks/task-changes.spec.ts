import { TaskChanges } from './task-changes';

/** No database URL: no listener, only this process's own changes (as on the embedded database). */
const changesOfOneProcess = (): TaskChanges =>
  new TaskChanges({ url: undefined } as unknown as ConstructorParameters<typeof TaskChanges>[0]);

describe('TaskChanges', () => {
  it('wakes an ends-only subscriber on the end, and every other one on any change', () => {
    const changes = changesOfOneProcess();
    const heard: string[] = [];
    const stopStatus = changes.subscribe('tsk_1', () => heard.push('ends-only'), { endsOnly: true });
    const stopAny = changes.subscribe('tsk_1', () => heard.push('any'));
    changes.changed(['tsk_1'], 'events');
    expect(heard).toEqual(['any']);
    changes.changed(['tsk_1'], 'end');
    expect(heard).toEqual(['any', 'ends-only', 'any']);
    changes.changed(['tsk_2'], 'end');
    stopStatus();
    stopAny();
    changes.changed(['tsk_1'], 'end');
    expect(heard).toHaveLength(3);
  });

  it('lets an ends-only watch sleep through other events (the start, output), and ends its wait on the end', async () => {
    jest.useFakeTimers();
    try {
      const changes = changesOfOneProcess();
      const watch = changes.watch('tsk_1', { endsOnly: true });
      let woken = false;
      const next = watch.next(60_000).then(() => (woken = true));
      changes.changed(['tsk_1'], 'events');
      await jest.advanceTimersByTimeAsync(59_000);
      expect(woken).toBe(false);
      changes.changed(['tsk_1'], 'end');
      await next;
      expect(woken).toBe(true);
      watch.close();
    } finally {
      jest.useRealTimers();
    }
  });
});
