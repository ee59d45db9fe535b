import { Injectable, Logger, OnModuleDestroy, Optional } from '@nestjs/common';
import { ShutdownDrain } from '../common/shutdown-drain';
import { TaskChanges } from './task-changes';
import { TaskEventRow, TaskQueueRepository } from './task-queue.repository';
import { ACTIVE_TASK_STATUSES } from './task.entity';

// Events read at a time, by a follower catching up and by a feed reading on.
const EVENT_BATCH = 100;
// How often the feeds look, in one statement for all the tasks they follow, for events they did not
// hear of (a notification lost while the listening connection was down), and send the heartbeats due.
const TICK_MS = 1000;

function isTerminalStatusEvent(event: TaskEventRow): boolean {
  return event.type === 'status' && !ACTIVE_TASK_STATUSES.includes(event.data.status as string);
}

/** One open event stream of a task, as the feed sees it. */
export interface EventFollower {
  /** The next events, in order, each once. */
  send(events: TaskEventRow[]): void;
  /** Nothing was sent for `heartbeatMs`. */
  heartbeat(): void;
  heartbeatMs: number;
  /** Aborted when the client leaves. */
  signal: AbortSignal;
}

/**
 * The events of the tasks that this instance's event streams follow, read once per task however many
 * streams follow it. Streams used to read for themselves, each at every change of its task and every
 * second besides: a thousand streams were a thousand queries a second while nothing happened, and one
 * per stream per event. Here each followed task has one feed: woken by the task's change notification
 * (TaskChanges), it reads the new events once and hands the same rows to every stream of the task. A
 * stream that starts behind (from the first event, or after Last-Event-ID) reads its own backlog first,
 * holding what the feed delivers meanwhile, then joins: duplicates are dropped by `seq`. One timer
 * serves all feeds: every second a single statement compares each followed task's last event with what
 * its feed read (so an event whose notification was lost arrives at most a second late), and sends the
 * heartbeats that are due.
 *
 * This relies on a task's events committing in `seq` order, as they do: each takes its number from the
 * task's row (`tasks.event_seq`) under that row's lock, held until commit.
 */
@Injectable()
export class TaskEventFeeds implements OnModuleDestroy {
  private readonly logger = new Logger('TaskEventFeeds');
  private readonly feeds = new Map<string, TaskFeed>();
  private timer?: NodeJS.Timeout;
  private checking = false;
  private closing = false;

  constructor(
    private readonly queue: TaskQueueRepository,
    private readonly changes: TaskChanges,
    @Optional() drain?: ShutdownDrain,
  ) {
    drain?.onRelease(() => this.onModuleDestroy());
  }

  /**
   * Sends the task's events after `afterSeq` to `follower` as they come; resolves once the terminal
   * status event was sent, the client left, or the process shuts down. Rejects when the database could not
   * be read for the follower's own backlog.
   */
  follow(taskId: string, afterSeq: number, follower: EventFollower): Promise<void> {
    if (this.closing || follower.signal.aborted) return Promise.resolve();
    let feed = this.feeds.get(taskId);
    if (!feed) {
      const created = new TaskFeed(taskId, this.queue, this.logger);
      created.start(this.changes, () => {
        if (this.feeds.get(taskId) === created) this.feeds.delete(taskId);
        if (!this.feeds.size) this.stopTicking();
      });
      this.feeds.set(taskId, (feed = created));
      this.startTicking();
    }
    return feed.follow(afterSeq, follower);
  }

  /** How many tasks have a feed on this instance. */
  get size(): number {
    return this.feeds.size;
  }

  private startTicking(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.tick(), TICK_MS);
    this.timer.unref();
  }

  private stopTicking(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private async tick(): Promise<void> {
    const now = Date.now();
    for (const feed of this.feeds.values()) feed.heartbeats(now);
    if (this.checking) return;
    const feeds = [...this.feeds.values()].filter((feed) => feed.head !== undefined);
    if (!feeds.length) return;
    this.checking = true;
    try {
      const last = await this.queue.lastEventSeqs(feeds.map((feed) => feed.taskId));
      for (const feed of feeds) if ((last.get(feed.taskId) ?? 0) > feed.head!) feed.readOn();
    } catch (error) {
      this.logger.warn(`checking followed tasks for events: ${(error as Error).message}`);
    } finally {
      this.checking = false;
    }
  }

  /** Shutdown: every stream ends now, so the server can close (when the port closes, or with the app). */
  onModuleDestroy(): void {
    this.closing = true;
    this.stopTicking();
    for (const feed of [...this.feeds.values()]) feed.close();
  }
}

/** One stream of a feed: where it is, and what the feed delivered while it caught up. */
class Follower {
  cursor: number;
  live = false;
  held: TaskEventRow[] = [];
  lastSentAt = Date.now();
  done = false;
  readonly ended: Promise<void>;
  private resolveEnded!: () => void;

  constructor(
    readonly stream: EventFollower,
    afterSeq: number,
  ) {
    this.cursor = afterSeq;
    this.ended = new Promise((resolve) => (this.resolveEnded = resolve));
  }

  /**
   * Sends the rows it has not had, up to the terminal status event (then it ends). A terminal status at
   * or before the cursor ends it too, sending nothing: a client that resumed with a Last-Event-ID past the
   * task's last event is sent only the events numbered after it, and ends with the task.
   */
  deliver(rows: readonly TaskEventRow[]): void {
    if (this.done) return;
    const terminal = rows.find(isTerminalStatusEvent);
    const fresh = rows.filter((row) => row.seq > this.cursor && (!terminal || row.seq <= terminal.seq));
    if (fresh.length) {
      try {
        this.stream.send(fresh);
      } catch {
        this.end();
        return;
      }
      this.cursor = fresh[fresh.length - 1].seq;
      this.lastSentAt = Date.now();
    }
    if (terminal) this.end();
  }

  /** Ends it if the task's last event (`last`) is its terminal status and the client already has it. */
  endIfPast(last: TaskEventRow | undefined): void {
    if (last && isTerminalStatusEvent(last) && last.seq <= this.cursor) this.end();
  }

  end(): void {
    this.done = true;
    this.held = [];
    this.resolveEnded();
  }
}

/** The feed of one task: its followers on this instance and the last event it read (`head`). */
class TaskFeed {
  /** The last event read for the live followers; undefined until the feed knows where the task is. */
  head?: number;
  private readonly followers = new Set<Follower>();
  private ready?: Promise<void>;
  private reading = false;
  private readAgain = false;
  private closed = false;
  private unsubscribe?: () => void;
  private onClosed?: () => void;

  constructor(
    readonly taskId: string,
    private readonly queue: TaskQueueRepository,
    private readonly logger: Logger,
  ) {}

  /**
   * Subscribes to the task's changes, then learns its last event: everything up to there is visible to
   * a follower's own backlog read, which starts after this; everything after, the feed reads.
   */
  start(changes: TaskChanges, onClosed: () => void): void {
    this.onClosed = onClosed;
    this.unsubscribe = changes.subscribe(this.taskId, (appended) => this.heard(appended));
    this.ready = this.queue.lastEventSeqs([this.taskId]).then((last) => {
      this.head = last.get(this.taskId) ?? 0;
      if (this.readAgain) this.readOn();
    });
    // A failed start fails its followers (below) and leaves the next follower a new feed.
    this.ready.catch(() => this.close());
  }

  async follow(afterSeq: number, stream: EventFollower): Promise<void> {
    const follower = new Follower(stream, afterSeq);
    this.followers.add(follower);
    const leave = (): void => follower.end();
    stream.signal.addEventListener('abort', leave);
    try {
      await this.ready;
      await this.catchUp(follower);
      await follower.ended;
    } finally {
      stream.signal.removeEventListener('abort', leave);
      follower.end();
      this.followers.delete(follower);
      if (!this.followers.size) this.close();
    }
  }

  /** Reads the follower's backlog itself, then hands it what the feed held for it, then it is live. */
  private async catchUp(follower: Follower): Promise<void> {
    let read = 0;
    while (!follower.done) {
      const rows = await this.queue.eventsAfter(this.taskId, follower.cursor, EVENT_BATCH);
      read += rows.length;
      follower.deliver(rows);
      if (rows.length < EVENT_BATCH) break;
    }
    // Resumed at the task's last event or past it: no read after the cursor finds the terminal status of
    // a task that has ended, so its last event is looked up, once. A task still live then ends later, with
    // a status after the feed's `head` that the feed hands over (and `deliver` ends on it).
    if (!read && !follower.done) follower.endIfPast(await this.queue.lastEvent(this.taskId));
    const held = follower.held;
    follower.held = [];
    follower.deliver(held);
    follower.live = true;
  }

  /**
   * A change of the task: an event appended in this process (a worker's report, an agent's post here)
   * that comes right after `head` is handed over as it is, without a read; anything else is read.
   */
  private heard(appended?: TaskEventRow): void {
    if (
      appended &&
      !this.closed &&
      !this.reading &&
      this.head !== undefined &&
      appended.seq === this.head + 1
    ) {
      this.head = appended.seq;
      this.handOver([appended]);
      return;
    }
    this.readOn();
  }

  /** Reads the events after `head` once for all followers; a wake during a read reads again after it. */
  readOn(): void {
    if (this.closed) return;
    if (this.reading || this.head === undefined) {
      this.readAgain = true;
      return;
    }
    this.reading = true;
    void this.read().finally(() => (this.reading = false));
  }

  private async read(): Promise<void> {
    try {
      do {
        this.readAgain = false;
        const rows = await this.queue.eventsAfter(this.taskId, this.head!, EVENT_BATCH);
        if (this.closed) return;
        if (!rows.length) continue;
        this.head = rows[rows.length - 1].seq;
        if (rows.length === EVENT_BATCH) this.readAgain = true;
        this.handOver(rows);
      } while (this.readAgain && !this.closed);
    } catch (error) {
      // The next tick sees the task ahead of `head` and reads again.
      this.logger.warn(`reading the events of ${this.taskId}: ${(error as Error).message}`);
    }
  }

  /** Rows after the last handed over, to the live followers; those still catching up hold them. */
  private handOver(rows: readonly TaskEventRow[]): void {
    for (const follower of this.followers) {
      if (follower.live) follower.deliver(rows);
      else if (!follower.done) follower.held.push(...rows);
    }
  }

  /** Heartbeats for the followers that would pass `heartbeatMs` without one before the next tick. */
  heartbeats(now: number): void {
    for (const follower of this.followers) {
      if (follower.done || now + TICK_MS - follower.lastSentAt <= follower.stream.heartbeatMs) continue;
      follower.lastSentAt = now;
      try {
        follower.stream.heartbeat();
      } catch {
        follower.end();
      }
    }
  }

  /** Ends every follower and stops listening; the feeds forget it. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.unsubscribe?.();
    for (const follower of this.followers) follower.end();
    this.onClosed?.();
  }
}
