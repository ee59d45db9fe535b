import { Injectable } from '@nestjs/common';
import type { Principal } from '../access/principal';
import { invalidCursor, ListQueryDto, Page } from '../common/pagination';
import type { TaskFailedData } from '../events/event-payloads.dto';
import { EventsService } from '../events/events.service';
import { PostedTaskEventResponse, PostTaskEventDto } from './dto/task.dto';
import { TaskChanges } from './task-changes';
import { BUDGET_EXCEEDED, costOf } from './task-costs';
import { checkedEventData } from './task-event-data';
import { EventFollower, TaskEventFeeds } from './task-event-feed';
import { TaskEventAppends } from './task-event-appends';
import { type RunningAttempt, TaskEventRow, TaskQueueRepository } from './task-queue.repository';
import type { Task } from './task.entity';
import { TaskError, TaskErrorCode } from './tasks.errors';
import { TasksService } from './tasks.service';

/** A task keeps at most this many events (CONTRACT, "Agent runs"); posting more is refused (429). */
export const MAX_TASK_EVENTS = 10_000;

/** An events cursor is the last `seq` seen: a positive integer, else 400 invalid_cursor. */
export function eventCursor(cursor: string | undefined): number {
  if (cursor === undefined) return 0;
  if (!/^[0-9]{1,9}$/.test(cursor)) throw invalidCursor();
  return Number(cursor);
}

/**
 * A task's event log: read as pages, followed as it grows (the SSE stream), and appended to by its run's
 * reports. Apart from TasksService, which makes and reads the task itself: the log is the part a run
 * writes to, with its own collaborators (the shared feeds, the change signal, the budget's end).
 */
/** A task's event as its streams and lists hand it over (rows of task_events). */
export type { TaskEventRow } from './task-queue.repository';

@Injectable()
export class TaskEvents {
  constructor(
    private readonly tasks: TasksService,
    private readonly queue: TaskQueueRepository,
    private readonly appends: TaskEventAppends,
    private readonly feeds: TaskEventFeeds,
    private readonly changes: TaskChanges,
    private readonly events: EventsService,
  ) {}

  /**
   * A page of the task's events after `cursor` (the last `seq` seen), oldest first; `next_cursor` while
   * more are stored. The events of a task that ends later come after it, on a later read.
   */
  async eventPage(principal: Principal, id: string, query: ListQueryDto): Promise<Page<TaskEventRow>> {
    const task = await this.tasks.get(principal, id);
    const limit = query.limit ?? 20;
    const rows = await this.queue.eventsAfter(task.id, eventCursor(query.cursor), limit + 1);
    const data = rows.slice(0, limit);
    return { data, next_cursor: rows.length > limit ? String(data[data.length - 1].seq) : null };
  }

  /** The number of the task's last event (0 for none): a stream that shows the task now goes on after it. */
  async lastSeq(task: Task): Promise<number> {
    return (await this.queue.lastEvent(task.id))?.seq ?? 0;
  }

  /** The task's streamed output, its `output` deltas joined in order ('' for none): one statement. */
  outputText(task: Task): Promise<string> {
    return this.queue.outputText(task.id);
  }

  /**
   * The task's events after `afterSeq` as they come, until its terminal status event: `follower.send` is
   * called with each batch, in order, each event once; resolves once the terminal status was sent, the
   * client left (`follower.signal`) or the process shuts down. The streams of one task on this instance
   * share one reader of its events (TaskEventFeeds); `heartbeat` is called when nothing was sent for
   * `heartbeatMs`.
   */
  followEvents(task: Task, afterSeq: number, follower: EventFollower): Promise<void> {
    return this.feeds.follow(task.id, afterSeq, follower);
  }

  /**
   * An agent's report on its run (the permission step let only this task's token through): appended
   * as the task's next event. Usage adds up; usage that costs more than the run reserved ends it as
   * failed, `budget_exceeded`, charged max_credits.
   */
  async postEvent(
    principal: Principal,
    id: string,
    dto: PostTaskEventDto,
    attempt?: RunningAttempt,
  ): Promise<PostedTaskEventResponse> {
    const data = checkedEventData(dto.type, dto.data);
    const usage =
      dto.type === 'usage'
        ? { inputTokens: data.input_tokens as number, outputTokens: data.output_tokens as number }
        : { inputTokens: 0, outputTokens: 0 };
    const appended = await this.appends.append({
      organizationId: principal.organizationId,
      taskId: id,
      type: dto.type,
      data,
      usage,
      maxEvents: MAX_TASK_EVENTS,
      attempt,
    });
    if (!appended.appended) {
      throw appended.reason === 'too_many_events'
        ? new TaskError(TaskErrorCode.TooManyTaskEvents, `A task keeps at most ${MAX_TASK_EVENTS} events.`)
        : new TaskError(TaskErrorCode.TaskTokenExpired, "The task token's run has ended.");
    }
    // The event itself goes with the word, so that this process's streams of the task send it unread.
    this.changes.changed([id], 'events', appended.event);
    if (dto.type === 'usage' && costOf(appended.usage) > appended.usage.maxCredits) {
      await this.endOverBudget(principal, id);
    }
    return { seq: appended.event.seq, type: dto.type };
  }

  private async endOverBudget(principal: Principal, id: string): Promise<void> {
    const task = await this.tasks.get(principal, id);
    const ended = await this.queue.failOverBudget(id, (manager, usage) =>
      this.events.record(manager, [
        {
          organizationId: task.organizationId,
          type: 'task.failed',
          data: {
            task_id: task.id,
            agent_type: task.agentType,
            usage,
            error: { ...BUDGET_EXCEEDED },
          } satisfies TaskFailedData,
        },
      ]),
    );
    if (ended) this.changes.changed([id], 'end');
  }
}
