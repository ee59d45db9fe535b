import { TaskChanges } from './task-changes';

/** No database URL: no listener, only this process's own changes (as on the embedded database). */
const changesOfOneProcess = (): TaskChanges =>
  new TaskChanges({ url: undefined } as unknown as ConstructorParameters<typeof TaskChanges>[0]);

describe('TaskChanges', () => {
  it('wakes a status-only subscriber on status changes, and every other one on any change', () => {
    const changes = changesOfOneProcess();
    const heard: string[] = [];
    const stopStatus = changes.subscribe('tsk_1', () => heard.push('status-only'), { statusOnly: true });
    const stopAny = changes.subscribe('tsk_1', () => heard.push('any'));
    changes.changed(['tsk_1'], 'events');
    expect(heard).toEqual(['any']);
    changes.changed(['tsk_1'], 'status');
    expect(heard).toEqual(['any', 'status-only', 'any']);
    changes.changed(['tsk_2'], 'status');
    stopStatus();
    stopAny();
    changes.changed(['tsk_1'], 'status');
    expect(heard).toHaveLength(3);
  });

  it("lets a status-only watch sleep through a change of events, and ends its wait on the status's", async () => {
    jest.useFakeTimers();
    try {
      const changes = changesOfOneProcess();
      const watch = changes.watch('tsk_1', { statusOnly: true });
      let woken = false;
      const next = watch.next(60_000).then(() => (woken = true));
      changes.changed(['tsk_1'], 'events');
      await jest.advanceTimersByTimeAsync(59_000);
      expect(woken).toBe(false);
      changes.changed(['tsk_1'], 'status');
      await next;
      expect(woken).toBe(true);
      watch.close();
    } finally {
      jest.useRealTimers();
    }
  });
});
