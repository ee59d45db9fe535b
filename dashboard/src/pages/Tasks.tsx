import { useState } from 'preact/hooks';
import { api, call, type Task } from '../api/client';
import { usePaged } from '../api/hooks';
import { SelectField, options } from '../components/Field';
import { Page, When } from '../components/Page';
import { Table } from '../components/Table';
import { Link } from '../router';

export const TASK_STATUSES: Task['status'][] = ['queued', 'running', 'succeeded', 'failed', 'cancelled'];

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

  return (
    <Page title="Tasks">
      <p class="lead">
        Your organization's agent runs, newest first. Open one to follow its progress and output live.
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
            cell: (task) => (
              <span class="instruction" title={task.instruction}>
                {task.instruction}
              </span>
            ),
          },
          { header: 'Agent', cell: (task) => task.agent_type },
          { header: 'Credits', cell: (task) => task.usage.credits },
          {
            // When it was queued, and under it when it ended: one column, so the table fits a laptop.
            header: 'Created',
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
