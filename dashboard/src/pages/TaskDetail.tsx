import { useEffect, useState } from 'preact/hooks';
import { api, call, type Task, type TaskOutputFile } from '../api/client';
import { useAction, useLoad } from '../api/hooks';
import { authorizedFetch, ApiError, problemOf, type ProblemDetails } from '../api/session';
import { followTaskEvents, TERMINAL_STATUSES } from '../api/task-events';
import { DetailList, Fact, TimeFact } from '../components/Facts';
import { Loading, Page, ProblemNote } from '../components/Page';
import { useCan } from '../permissions';
import { Link } from '../router';
import { StatusBadge, useAgentNames } from './Tasks';

type Status = Task['status'];
type Connection = 'connecting' | 'live' | 'reconnecting' | 'ended';

/** What the events have told so far; rebuilt from the first event, so a reload shows the whole story. */
interface Followed {
  status: Status | null;
  progress: { message?: string; percent?: number } | null;
  /** The output's pieces as they arrived. */
  output: string[];
  tokens: { input: number; output: number };
  files: TaskOutputFile[];
}

const NOTHING_YET: Followed = {
  status: null,
  progress: null,
  output: [],
  tokens: { input: 0, output: 0 },
  files: [],
};

const CONNECTION_LABEL: Record<Connection, string> = {
  connecting: 'Connecting to the event stream…',
  live: 'Following live.',
  reconnecting: 'The stream dropped; reconnecting where it left off…',
  ended: 'The task has ended.',
};

const number = (value: unknown) => (typeof value === 'number' ? value : 0);

function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

export function TaskDetail({ id }: { id: string }) {
  const task = useLoad(() => call(api.GET('/v1/tasks/{id}', { params: { path: { id } } })), [id]);
  const [followed, setFollowed] = useState<Followed>(NOTHING_YET);
  const [connection, setConnection] = useState<Connection>('connecting');
  const [streamProblem, setStreamProblem] = useState<ProblemDetails | null>(null);

  useEffect(() => {
    const stop = new AbortController();
    setFollowed(NOTHING_YET);
    void followTaskEvents(id, stop.signal, {
      onState: (state) => {
        setConnection(state);
        // The final usage, credits, result or error: the task object has them once the task ended.
        if (state === 'ended') task.reload();
      },
      onProblem: setStreamProblem,
      onEvent: (event) =>
        setFollowed((now) => {
          switch (event.type) {
            case 'status':
              return { ...now, status: event.data.status as Status };
            case 'progress':
              return { ...now, progress: event.data as Followed['progress'] };
            case 'output':
              return { ...now, output: [...now.output, String(event.data.delta ?? '')] };
            case 'usage':
              return {
                ...now,
                tokens: {
                  input: now.tokens.input + number(event.data.input_tokens),
                  output: now.tokens.output + number(event.data.output_tokens),
                },
              };
            case 'file':
              return { ...now, files: [...now.files, event.data as unknown as TaskOutputFile] };
            default:
              return now;
          }
        }),
    });
    return () => stop.abort();
  }, [id]);

  const data = task.data;
  const status = followed.status ?? data?.status;
  const agentName = useAgentNames();
  const title = `Task ${id}`;

  return (
    <Page title={title}>
      <p>
        <Link href="/tasks">← Back to the task list</Link>
      </p>
      {task.loading && !data && <Loading />}
      <ProblemNote problem={task.problem} />
      <ProblemNote problem={streamProblem} />
      {data && (
        <>
          <p class="connection" role="status">
            {streamProblem ? 'Not following: the event stream was refused.' : CONNECTION_LABEL[connection]}
          </p>
          <CancelTask task={data} status={status} onCancelled={task.reload} />
          <DetailList headingId="task-summary" heading="Summary">
            <Fact term="Status">{status && <StatusBadge status={status} />}</Fact>
            <Fact term="Instruction">
              <span class="break">{data.instruction}</span>
            </Fact>
            <Fact term="Agent">
              {agentName(data)}
              {data.agent_id && agentName(data) !== data.agent_type && (
                <span class="muted"> ({data.agent_type})</span>
              )}
              {data.agent_id && (
                <>
                  {' '}
                  <code>{data.agent_id}</code>
                </>
              )}
            </Fact>
            <TimeFact term="Created" at={data.created_at} />
            <TimeFact term="Started" at={data.started_at} fallback="Not yet" />
            <TimeFact term="Completed" at={data.completed_at} fallback="Not yet" />
            <Fact term="Attempts">{data.attempts}</Fact>
            {data.error && (
              <Fact term="Error">
                <code>{data.error.code}</code>: {data.error.message}
              </Fact>
            )}
          </DetailList>
          <Progress
            progress={followed.progress ?? data.progress}
            ended={status !== undefined && TERMINAL_STATUSES.includes(status)}
          />
          <Output pieces={followed.output} ended={connection === 'ended'} />
          <Usage task={data} tokens={followed.tokens} ended={connection === 'ended'} />
          <Files files={followed.files.length ? followed.files : data.output_files} />
          {data.status === 'succeeded' && data.result !== undefined && (
            <section aria-labelledby="task-result">
              <h2 id="task-result">Result</h2>
              <pre class="output">{JSON.stringify(data.result, null, 2)}</pre>
            </section>
          )}
        </>
      )}
    </Page>
  );
}

function CancelTask({ task, status, onCancelled }: { task: Task; status?: Status; onCancelled: () => void }) {
  const can = useCan();
  const action = useAction();
  if (!can('tasks:update') || !status || TERMINAL_STATUSES.includes(status)) return null;
  return (
    <div class="actions">
      <button
        type="button"
        class="danger"
        disabled={action.busy}
        onClick={() =>
          void action.run(async () => {
            await call(api.POST('/v1/tasks/{id}/cancel', { params: { path: { id: task.id } } }));
            onCancelled();
          })
        }
      >
        Cancel task
      </button>
      <ProblemNote problem={action.problem} />
    </div>
  );
}

/**
 * The last progress a running task reported, as a bar. A task that ended shows no bar (its last report
 * may say 90%, which it no longer is): only the last message, if any, beside "ended".
 */
function Progress({ progress, ended }: { progress: Followed['progress']; ended: boolean }) {
  return (
    <section aria-labelledby="task-progress">
      <h2 id="task-progress">Progress</h2>
      {ended ? (
        <p class="progress-ended">
          No longer running{progress?.message ? `. Its last report: ${progress.message}` : '.'}
        </p>
      ) : !progress ? (
        <p class="empty">No progress reported yet.</p>
      ) : (
        <div class="progress">
          {progress.percent !== undefined && (
            <progress max={100} value={progress.percent} aria-labelledby="task-progress">
              {progress.percent}%
            </progress>
          )}
          <p>
            {progress.percent !== undefined && <strong>{progress.percent}%</strong>}
            {progress.percent !== undefined && progress.message && ' · '}
            {progress.message}
          </p>
        </div>
      )}
    </section>
  );
}

function Output({ pieces, ended }: { pieces: string[]; ended: boolean }) {
  return (
    <section aria-labelledby="task-output">
      <h2 id="task-output">Output</h2>
      {pieces.length === 0 ? (
        <p class="empty">{ended ? 'The run sent no output.' : 'No output yet.'}</p>
      ) : (
        // A log region: a screen reader hears the new pieces as they arrive.
        <pre class="output" role="log" aria-labelledby="task-output" tabIndex={0}>
          {pieces.join('')}
        </pre>
      )}
    </section>
  );
}

function Usage({ task, tokens, ended }: { task: Task; tokens: Followed['tokens']; ended: boolean }) {
  // While it runs, the tokens reported so far (the events); once ended, the task object's settled figures.
  const input = ended ? task.usage.input_tokens : Math.max(tokens.input, task.usage.input_tokens);
  const output = ended ? task.usage.output_tokens : Math.max(tokens.output, task.usage.output_tokens);
  return (
    <DetailList headingId="task-usage" heading="Usage and cost">
      <Fact term="Input tokens">{input}</Fact>
      <Fact term="Output tokens">{output}</Fact>
      <Fact term="Credits">
        {ended ? task.usage.credits : `settled when the run ends (at most ${task.max_credits} reserved)`}
      </Fact>
    </DetailList>
  );
}

function Files({ files }: { files: TaskOutputFile[] }) {
  const can = useCan();
  const [problem, setProblem] = useState<ProblemDetails | null>(null);
  // The content needs the session's token, which a plain link cannot carry: fetched, then saved from memory.
  const download = async (file: TaskOutputFile) => {
    setProblem(null);
    try {
      const response = await authorizedFetch(new Request(`/v1/files/${encodeURIComponent(file.id)}/content`));
      if (!response.ok) throw new ApiError(await problemOf(response));
      const url = URL.createObjectURL(await response.blob());
      const link = document.createElement('a');
      link.href = url;
      link.download = file.filename;
      link.click();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
    } catch (error) {
      setProblem(
        error instanceof ApiError
          ? error.problem
          : { title: 'Error', detail: 'The file could not be downloaded.' },
      );
    }
  };
  return (
    <section aria-labelledby="task-files">
      <h2 id="task-files">Output files</h2>
      {files.length === 0 ? (
        <p class="empty">No output files.</p>
      ) : (
        <ul class="files">
          {files.map((file) => (
            <li key={file.id}>
              <span class="break">{file.filename}</span> <span class="muted">{formatSize(file.size)}</span>{' '}
              <code class="muted" title={`SHA-256 ${file.sha256}`}>
                {file.sha256.slice(0, 12)}…
              </code>
              {can('files:read') && (
                <button
                  type="button"
                  class="secondary small"
                  aria-label={`Download ${file.filename}`}
                  onClick={() => void download(file)}
                >
                  Download
                </button>
              )}
            </li>
          ))}
        </ul>
      )}
      <ProblemNote problem={problem} />
    </section>
  );
}
