import {
  Role,
  type Artifact,
  type Message,
  type Part,
  type StreamResponse,
  type Task as A2aTask,
  type TaskStatus as A2aTaskStatus,
} from '@a2a-js/sdk';
import type { TaskEventRow } from '../tasks/task-events';
import type { Task, TaskOutputFile, TaskStatus } from '../tasks/task.entity';
import { a2aStateOf } from './a2a-task-states';

/** Artifact ids: a task's result, its streamed output, and each output file (`file-<id>`). */
export const RESULT_ARTIFACT = 'result';
export const OUTPUT_ARTIFACT = 'output';
const fileArtifactId = (file: TaskOutputFile): string => `file-${file.id}`;

const part = (content: Part['content'], extra: Partial<Part> = {}): Part => ({
  content,
  metadata: undefined,
  filename: '',
  mediaType: '',
  ...extra,
});

/** What a status and its messages need of a task. */
type TaskRef = Pick<Task, 'id' | 'contextId'>;

const message = (task: TaskRef, role: Role, text: string, messageId: string): Message => ({
  messageId,
  contextId: contextIdOf(task),
  taskId: task.id,
  role,
  parts: [part({ $case: 'text', value: text })],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

/** A task made over REST or MCP is a conversation of its own. */
export const contextIdOf = (task: TaskRef): string => task.contextId ?? task.id;

/**
 * A status: its state, when it was reached, and a failed task's error as the agent's message. Also what
 * a push notification sends (A2aPushDeliveries), read from the status event.
 */
export function a2aStatusOf(
  task: TaskRef & Pick<Task, 'error'>,
  status: TaskStatus,
  at: Date,
): A2aTaskStatus {
  return {
    state: a2aStateOf(status),
    timestamp: at.toISOString(),
    message:
      status === 'failed' && task.error
        ? message(task, Role.ROLE_AGENT, `${task.error.code}: ${task.error.message}`, `${task.id}-error`)
        : undefined,
  };
}

/** Builds the views of one instance's tasks: file URLs are this server's public ones. */
export class A2aTaskViews {
  constructor(private readonly publicUrl: string) {}

  /**
   * The task as A2A shows it: history is the message that made it (its instruction; at most
   * `historyLength` messages, 0 for none); a finished task has its artifacts (artifactsOf).
   */
  taskOf(task: Task, output: string | undefined, historyLength?: number): A2aTask {
    const history = [message(task, Role.ROLE_USER, task.instruction, `${task.id}-instruction`)];
    return {
      id: task.id,
      contextId: contextIdOf(task),
      status: a2aStatusOf(task, task.status, task.updatedAt),
      artifacts: output === undefined ? [] : this.artifactsOf(task, output),
      history: historyLength === undefined ? history : history.slice(0, Math.max(0, historyLength)),
      metadata: undefined,
    };
  }

  /** A finished task's result as a data part, its streamed output as a text part, each output file. */
  artifactsOf(task: Task, output: string): Artifact[] {
    const artifacts: Artifact[] = [];
    if (task.status === 'succeeded') {
      artifacts.push(
        artifact(RESULT_ARTIFACT, 'result', [part({ $case: 'data', value: task.result ?? null })]),
      );
    }
    if (output) artifacts.push(artifact(OUTPUT_ARTIFACT, 'output', [part({ $case: 'text', value: output })]));
    for (const file of task.outputFiles) artifacts.push(this.fileArtifact(file));
    return artifacts;
  }

  /** A succeeded task's result, as the artifact update its stream ends with. */
  resultUpdateOf(task: Task): StreamResponse {
    return {
      payload: {
        $case: 'artifactUpdate',
        value: {
          taskId: task.id,
          contextId: contextIdOf(task),
          artifact: artifact(RESULT_ARTIFACT, 'result', [
            part({ $case: 'data', value: task.result ?? null }),
          ]),
          append: false,
          lastChunk: true,
          metadata: undefined,
        },
      },
    };
  }

  /**
   * A task event as A2A streams it: a status change as a status update, progress as a WORKING update
   * whose message is the progress message, an output delta appended to the `output` artifact, an
   * output file as an artifact of its own; usage has no A2A form (undefined).
   */
  streamResponseOf(task: Task, event: TaskEventRow, firstOutput: boolean): StreamResponse | undefined {
    const base = { taskId: task.id, contextId: contextIdOf(task), metadata: undefined };
    switch (event.type) {
      case 'status':
        return {
          payload: {
            $case: 'statusUpdate',
            value: { ...base, status: a2aStatusOf(task, event.data.status as TaskStatus, event.createdAt) },
          },
        };
      case 'progress': {
        const progress = event.data as { message?: string; percent?: number };
        const text = progress.message ?? (progress.percent !== undefined ? `${progress.percent}%` : '');
        return {
          payload: {
            $case: 'statusUpdate',
            value: {
              ...base,
              status: {
                state: a2aStateOf('running'),
                timestamp: event.createdAt.toISOString(),
                message: message(task, Role.ROLE_AGENT, text, `${task.id}-progress-${event.seq}`),
              },
              metadata:
                progress.percent !== undefined ? { 'gatehouse/percent': progress.percent } : undefined,
            },
          },
        };
      }
      case 'output':
        return {
          payload: {
            $case: 'artifactUpdate',
            value: {
              ...base,
              artifact: artifact(OUTPUT_ARTIFACT, 'output', [
                part({ $case: 'text', value: String(event.data.delta ?? '') }),
              ]),
              append: !firstOutput,
              lastChunk: false,
            },
          },
        };
      case 'file':
        return {
          payload: {
            $case: 'artifactUpdate',
            value: {
              ...base,
              artifact: this.fileArtifact(event.data as unknown as TaskOutputFile),
              append: false,
              lastChunk: true,
            },
          },
        };
      default:
        return undefined;
    }
  }

  private fileArtifact(file: TaskOutputFile): Artifact {
    return artifact(fileArtifactId(file), file.filename, [
      part(
        { $case: 'url', value: `${this.publicUrl}/v1/files/${file.id}/content` },
        { filename: file.filename },
      ),
    ]);
  }
}

function artifact(artifactId: string, name: string, parts: Part[]): Artifact {
  return { artifactId, name, description: '', parts, metadata: undefined, extensions: [] };
}
