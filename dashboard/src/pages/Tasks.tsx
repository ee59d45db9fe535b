import { useState } from 'preact/hooks';
import { api, call, everyPage, type Task } from '../api/client';
import { useLoad, usePaged, usePoll } from '../api/hooks';
import { SelectField, options } from '../components/Field';
import { Page, When } from '../components/Page';
import { Table } from '../components/Table';
import { useCan } from '../permissions';
import { Link } from '../router';

/** The list asks again this often while the page is visible, so a task's new status shows by itself. */
export const TASK_LIST_POLL_MS = 3_000;

export const TASK_STATUSES: Task['status'][] = ['queued', 'running', 'succeeded', 'failed', 'cancelled'];

/**
 * The organization's agents by id, for naming a task's agent; empty without `agents:read`. A task made
 * without an agent id (a built-in type) or with an agent deleted since is named by its type.
 */
export function useAgentNames(): (task: Task) => string {
  const can = useCan();
  const agents = useLoad(
    async () =>
      can('agents:read')
        ? everyPage((cursor) => call(api.GET('/v1/agents', { params: { query: { cursor } } })))
        : [],
    [],
  );
  const names = new Map((agents.data ?? []).map((agent) => [agent.id, agent.name]));
  return (task) => (task.agent_id && names.get(task.agent_id)) || task.agent_type;
}

/** A task's status as a badge, coloured like a key's. */
export function StatusBadge({ status }: { status: Task['status'] }) {
  return <span class={`badge ${status}`}>{status}</span>;
}

export function Tasks() {
  const [status, setStatus] = useState<Task['status'] | ''>('');
  const tasks = usePaged(
    (cursor) => call(api.GET('/v1/tasks', { params: { query: { cursor, status: status || undefined } } })),
    [status],
  );
  const agentName = useAgentNames();
  // Live: a running task's status and progress, and new tasks, show without a reload.
  usePoll(tasks.refresh, TASK_LIST_POLL_MS);

  return (
    <Page title="Tasks">
      <p class="lead">
        Your organization's agent runs, newest first; the list follows their status by itself. Open one to
        follow its progress and output live.
      </p>
      <div class="toolbar">
        <SelectField
          label="Filter by status"
          value={status}
          onValue={(value) => setStatus(value as Task['status'] | '')}
          options={[{ value: '', label: 'Any status' }, ...options(TASK_STATUSES)]}
        />
        <button type="button" class="secondary toolbar-action" onClick={tasks.reload}>
          Refresh
        </button>
      </div>
      <Table
        caption="Tasks"
        class="tasks"
        rows={tasks.items}
        rowKey={(task) => task.id}
        paged={tasks}
        empty={status ? 'No tasks match.' : 'No tasks yet.'}
        columns={[
          {
            header: 'Task',
            rowHeader: true,
            cell: (task) => (
              <Link href={`/tasks/${task.id}`}>
                <code>{task.id}</code>
              </Link>
            ),
          },
          {
            header: 'Status',
            cell: (task) => (
              <span class="stack">
                <StatusBadge status={task.status} />
                {task.status === 'running' && task.progress?.percent !== undefined && (
                  <span class="secondary-line">{task.progress.percent}% done</span>
                )}
              </span>
            ),
          },
          {
            header: 'Instruction',
            fold: true,
            cell: (task) => (
              <span class="instruction" title={task.instruction}>
                {task.instruction}
              </span>
            ),
          },
          {
            header: 'Agent',
            fold: true,
            cell: (task) => <span title={`Type ${task.agent_type}`}>{agentName(task)}</span>,
          },
          { header: 'Credits', fold: true, cell: (task) => task.usage.credits },
          {
            // When it was queued, and under it when it ended: one column, so the table fits a laptop.
            header: 'Created',
            fold: true,
            cell: (task) => (
              <span class="stack">
                <When at={task.created_at} />
                {task.completed_at && (
                  <span class="secondary-line">
                    ended <When at={task.completed_at} />
                  </span>
                )}
              </span>
            ),
          },
        ]}
      />
    </Page>
  );
}
