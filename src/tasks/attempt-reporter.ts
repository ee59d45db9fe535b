import type { AgentRunReporter, ReportedEvent } from '../agents/agent-runner';
import type { PostedTaskEventResponse, PostedTaskEventType, PostTaskEventDto } from './dto/task.dto';
import { TaskError, TaskErrorCode } from './tasks.errors';

/** What a reporter needs of the tasks module, for one attempt of one task. */
export interface AttemptReporterPorts {
  /**
   * Appends the event as `POST /v1/tasks/{id}/events` does (checked, capped, usage priced and budgeted),
   * only while the attempt is the task's running one, its lease held by this worker (a task token's
   * test); otherwise rejects with `task_token_expired`.
   */
  post(event: PostTaskEventDto): Promise<PostedTaskEventResponse>;
}

const attemptEnded = (): TaskError =>
  new TaskError(
    TaskErrorCode.TaskTokenExpired,
    "The run's attempt has ended, was cancelled or was taken over by another attempt: its reports are refused.",
  );

/**
 * The reporter of one attempt (AgentRunContext.report). It refuses every report once the attempt has
 * ended: at once after the run returned or its signal was aborted, and, like a task token, whenever the
 * task row says the attempt is no longer the running one (another worker took it over before this one's
 * heartbeat noticed).
 */
export class AttemptReporter implements AgentRunReporter {
  private ended = false;
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(
    private readonly ports: AttemptReporterPorts,
    signal: AbortSignal,
  ) {
    if (signal.aborted) this.ended = true;
    else signal.addEventListener('abort', () => (this.ended = true), { once: true });
  }

  progress(progress: { message?: string; percent?: number }): Promise<ReportedEvent> {
    return this.report('progress', { ...progress });
  }

  output(delta: string): Promise<ReportedEvent> {
    return this.report('output', { delta });
  }

  usage(usage: { input_tokens: number; output_tokens: number }): Promise<ReportedEvent> {
    return this.report('usage', { ...usage });
  }

  /**
   * The attempt is over: later reports are refused, and this resolves once those already under way have
   * settled, so the run's events are stored before its outcome (and its usage counted in it).
   */
  async end(): Promise<void> {
    this.ended = true;
    await Promise.allSettled(this.inFlight);
  }

  private report(type: PostedTaskEventType, data: Record<string, unknown>): Promise<ReportedEvent> {
    const posted = this.post(type, data);
    this.inFlight.add(posted);
    const settled = (): void => void this.inFlight.delete(posted);
    posted.then(settled, settled);
    return posted;
  }

  private async post(type: PostedTaskEventType, data: Record<string, unknown>): Promise<ReportedEvent> {
    // A report made before the run ended goes on (end() waits for it); the row still has the last word.
    if (this.ended) throw attemptEnded();
    try {
      const { seq } = await this.ports.post({ type, data });
      return { seq };
    } catch (error) {
      if (error instanceof TaskError && error.code === TaskErrorCode.TaskTokenExpired) throw attemptEnded();
      throw error;
    }
  }
}
