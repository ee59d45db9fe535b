import { AttemptReporter, type AttemptReporterPorts } from './attempt-reporter';
import type { PostTaskEventDto } from './dto/task.dto';
import { TaskError, TaskErrorCode } from './tasks.errors';

/** Ports that store what is posted, live while `live` says so; `gate` holds posts until opened. */
function ports(live = true) {
  const posted: PostTaskEventDto[] = [];
  let open: () => void = () => undefined;
  const gate = { held: false, opened: Promise.resolve() };
  const fake: AttemptReporterPorts & { live: boolean } = {
    live,
    post: async (event) => {
      if (gate.held) await gate.opened;
      if (!fake.live) throw new TaskError(TaskErrorCode.TaskTokenExpired, 'ended');
      posted.push(event);
      return { seq: posted.length, type: event.type };
    },
  };
  const hold = (): void => {
    gate.held = true;
    gate.opened = new Promise<void>((resolve) => (open = resolve));
  };
  return { fake, posted, hold, release: () => open() };
}

const expired = expect.objectContaining({ code: 'task_token_expired' });

describe('AttemptReporter', () => {
  it('posts progress, output and usage as the event types and data an agent posts', async () => {
    const { fake, posted } = ports();
    const reporter = new AttemptReporter(fake, new AbortController().signal);
    expect(await reporter.progress({ message: 'half', percent: 50 })).toEqual({ seq: 1 });
    expect(await reporter.output('abc')).toEqual({ seq: 2 });
    expect(await reporter.usage({ input_tokens: 3, output_tokens: 4 })).toEqual({ seq: 3 });
    expect(posted).toEqual([
      { type: 'progress', data: { message: 'half', percent: 50 } },
      { type: 'output', data: { delta: 'abc' } },
      { type: 'usage', data: { input_tokens: 3, output_tokens: 4 } },
    ]);
  });

  it('refuses once the attempt is no longer the running one, as a task token is', async () => {
    const { fake, posted } = ports(false);
    const reporter = new AttemptReporter(fake, new AbortController().signal);
    await expect(reporter.output('late')).rejects.toEqual(expired);
    expect(posted).toEqual([]);
  });

  it('refuses once its signal is aborted, or the run has ended', async () => {
    const aborted = new AbortController();
    const first = ports();
    const cancelled = new AttemptReporter(first.fake, aborted.signal);
    aborted.abort();
    await expect(cancelled.progress({})).rejects.toEqual(expired);

    const second = ports();
    const ended = new AttemptReporter(second.fake, new AbortController().signal);
    await ended.end();
    await expect(ended.usage({ input_tokens: 1, output_tokens: 1 })).rejects.toEqual(expired);
    expect([...first.posted, ...second.posted]).toEqual([]);
  });

  it('ends only once the reports under way are stored, so they come before the outcome', async () => {
    const { fake, posted, hold, release } = ports();
    const reporter = new AttemptReporter(fake, new AbortController().signal);
    hold();
    const report = reporter.output('in flight');
    let ended = false;
    const end = reporter.end().then(() => (ended = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(ended).toBe(false);
    release();
    await end;
    await expect(report).resolves.toEqual({ seq: 1 });
    expect(posted).toHaveLength(1);
  });
});
