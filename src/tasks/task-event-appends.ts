import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { ItemFailure, TickBatch } from '../common/tick-batch';
import type { RunningAttempt, TaskEventRow } from './task-queue.repository';
import type { Task } from './task.entity';

/** A posted event appended to a running task (the row as stored), with the task's usage after it. */
export type AppendedEvent =
  | {
      appended: true;
      event: TaskEventRow;
      usage: Pick<
        Task,
        'inputTokens' | 'outputTokens' | 'maxCredits' | 'creditsPer1kInputTokens' | 'creditsPer1kOutputTokens'
      >;
    }
  | { appended: false; reason: 'not_running' | 'too_many_events' };

/** One posted event to append to its running task (TaskEvents.postEvent checked it). */
export interface EventAppend {
  organizationId: string;
  taskId: string;
  type: string;
  data: Record<string, unknown>;
  usage: { inputTokens: number; outputTokens: number };
  maxEvents: number;
  /** A worker's own report: appended only while this attempt holds the task. */
  attempt?: RunningAttempt;
}

interface AppendedRow {
  n: number;
  seq: number;
  type: string;
  data: Record<string, unknown>;
  created_at: Date;
  input_tokens: string;
  output_tokens: string;
  max_credits: number;
  credits_per_1k_input_tokens: number;
  credits_per_1k_output_tokens: number;
}

/**
 * Appends posted events (an agent's output, progress and usage) to their running tasks, each numbered
 * after its task's last: the count, the event row, the last progress and the usage totals change
 * together or not at all (and the event's trigger notifies the task's streams at commit). Refused once
 * the task (or the attempt named) no longer runs, or when it holds `maxEvents` events. The events
 * posted in one turn of the event loop go in one statement: 200 model runs answering together post 400
 * events (their last output and their usage), and one statement a task left them queueing for the
 * worker's few connections (bench:llm). A statement changes each task once, so a task's second event of
 * the turn goes in the next statement, after its first; the tasks are locked in the order of their ids,
 * as every statement that changes several running tasks locks them (task-queue.repository.ts).
 */
@Injectable()
export class TaskEventAppends {
  /** Two statements at most at once; the events posted meanwhile go in the next (TickBatch). */
  private readonly batch = new TickBatch<EventAppend, AppendedEvent>((appends) => this.appendAll(appends), 2);

  constructor(private readonly dataSource: DataSource) {}

  /** The event's seq and the task's usage after it; refused when the task (or attempt) is not running. */
  append(event: EventAppend): Promise<AppendedEvent> {
    return this.batch.add(event);
  }

  private async appendAll(appends: EventAppend[]): Promise<(AppendedEvent | ItemFailure)[]> {
    const results: (AppendedEvent | ItemFailure)[] = [];
    let rest = appends.map((append, n) => ({ append, n }));
    while (rest.length) {
      const tasks = new Set<string>();
      const now: typeof rest = [];
      const later: typeof rest = [];
      for (const entry of rest) {
        if (tasks.has(entry.append.taskId)) {
          later.push(entry);
        } else {
          tasks.add(entry.append.taskId);
          now.push(entry);
        }
      }
      const appended = new Map((await this.appendEach(now, results)).map((row) => [row.n, row]));
      const refused = now.filter(({ n }) => !appended.has(n) && !(results[n] instanceof ItemFailure));
      const reasons = refused.length ? await this.whyRefused(refused.map(({ append }) => append)) : [];
      for (const { n } of now) {
        if (results[n] instanceof ItemFailure) continue;
        const row = appended.get(n);
        results[n] = row
          ? {
              appended: true,
              event: { seq: row.seq, type: row.type, data: row.data, createdAt: row.created_at },
              usage: {
                inputTokens: Number(row.input_tokens),
                outputTokens: Number(row.output_tokens),
                maxCredits: row.max_credits,
                creditsPer1kInputTokens: row.credits_per_1k_input_tokens,
                creditsPer1kOutputTokens: row.credits_per_1k_output_tokens,
              },
            }
          : { appended: false, reason: reasons[refused.findIndex((entry) => entry.n === n)] };
      }
      rest = later;
    }
    return results;
  }

  /**
   * The entries in one statement; if it fails, each in a statement of its own, so that an event the
   * database refuses (text it cannot store) fails its own report alone (`results[n]`, an ItemFailure),
   * not the other runs' reports that happened to come in the same turn.
   */
  private async appendEach(
    entries: { append: EventAppend; n: number }[],
    results: (AppendedEvent | ItemFailure)[],
  ): Promise<AppendedRow[]> {
    try {
      return await this.appendOnce(entries);
    } catch (error) {
      if (entries.length === 1) {
        results[entries[0].n] = new ItemFailure(error);
        return [];
      }
      const rows: AppendedRow[] = [];
      for (const entry of entries) rows.push(...(await this.appendEach([entry], results)));
      return rows;
    }
  }

  /** One statement for events of distinct tasks: the rows of those that were appended, by `n`. */
  private async appendOnce(entries: { append: EventAppend; n: number }[]): Promise<AppendedRow[]> {
    const wanted = entries.map(({ append, n }) => ({
      n,
      id: append.taskId,
      organization_id: append.organizationId,
      type: append.type,
      data: append.data,
      input_tokens: append.usage.inputTokens,
      output_tokens: append.usage.outputTokens,
      max_events: append.maxEvents,
      attempts: append.attempt?.attempts ?? null,
      lease_owner: append.attempt?.leaseOwner ?? null,
    }));
    return this.dataSource.query<AppendedRow[]>(
      `WITH w AS (
         SELECT * FROM jsonb_to_recordset($1::jsonb) AS w(n int, id text, organization_id text, type text,
           data jsonb, input_tokens bigint, output_tokens bigint, max_events int, attempts int, lease_owner text)),
       locked AS (
         SELECT tasks.id FROM tasks JOIN w ON tasks.id = w.id AND tasks.organization_id = w.organization_id
          WHERE tasks.status = 'running' AND tasks.event_seq < w.max_events
            AND (w.attempts IS NULL OR (tasks.attempts = w.attempts AND tasks.lease_owner = w.lease_owner
                 AND tasks.lease_expires_at > now()))
          ORDER BY tasks.id FOR UPDATE OF tasks),
       t AS (
         UPDATE tasks SET event_seq = tasks.event_seq + 1,
                progress = CASE WHEN w.type = 'progress' THEN w.data ELSE tasks.progress END,
                input_tokens = tasks.input_tokens + w.input_tokens, output_tokens = tasks.output_tokens + w.output_tokens
           FROM locked JOIN w ON w.id = locked.id
          WHERE tasks.id = locked.id
          RETURNING w.n, tasks.id, tasks.event_seq, w.type, w.data, tasks.input_tokens, tasks.output_tokens,
                    tasks.max_credits, tasks.credits_per_1k_input_tokens, tasks.credits_per_1k_output_tokens),
       e AS (INSERT INTO task_events (task_id, seq, type, data) SELECT id, event_seq, type, data FROM t
             RETURNING task_id, data, created_at)
       SELECT t.n, t.event_seq AS seq, t.type, e.data, e.created_at, t.input_tokens, t.output_tokens,
              t.max_credits, t.credits_per_1k_input_tokens, t.credits_per_1k_output_tokens
         FROM t JOIN e ON e.task_id = t.id`,
      [JSON.stringify(wanted)],
    );
  }

  /** Why each refused event was: its task at the event cap while the attempt still runs, or over. */
  private async whyRefused(appends: EventAppend[]): Promise<('not_running' | 'too_many_events')[]> {
    const live = await this.dataSource.query<{ n: number; live: boolean }[]>(
      `SELECT w.n, tasks.status = 'running' AND (w.attempts IS NULL OR (tasks.attempts = w.attempts
                AND tasks.lease_owner = w.lease_owner AND tasks.lease_expires_at > now())) AS live
         FROM jsonb_to_recordset($1::jsonb) AS w(n int, id text, attempts int, lease_owner text)
         JOIN tasks ON tasks.id = w.id`,
      [
        JSON.stringify(
          appends.map((append, n) => ({
            n,
            id: append.taskId,
            attempts: append.attempt?.attempts ?? null,
            lease_owner: append.attempt?.leaseOwner ?? null,
          })),
        ),
      ],
    );
    const liveOf = new Map(live.map((row) => [row.n, row.live]));
    return appends.map((_, n) => (liveOf.get(n) ? 'too_many_events' : 'not_running'));
  }
}
