import { TaskState } from '@a2a-js/sdk';
import type { TaskStatus } from '../tasks/task.entity';

/** A task's status as A2A names it (CONTRACT, "Agents for other agents: A2A"): one to one. */
const A2A_STATES: Record<TaskStatus, TaskState> = {
  queued: TaskState.TASK_STATE_SUBMITTED,
  running: TaskState.TASK_STATE_WORKING,
  succeeded: TaskState.TASK_STATE_COMPLETED,
  failed: TaskState.TASK_STATE_FAILED,
  cancelled: TaskState.TASK_STATE_CANCELED,
};

export const a2aStateOf = (status: TaskStatus): TaskState => A2A_STATES[status];

/** The Gatehouse status an A2A state filter names; undefined for states no task of ours is ever in. */
export function taskStatusOf(state: TaskState): TaskStatus | undefined {
  return (Object.keys(A2A_STATES) as TaskStatus[]).find((status) => A2A_STATES[status] === state);
}
