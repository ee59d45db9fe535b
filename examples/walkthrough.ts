/**
 * The README's walkthrough as a program, written against a client generated from the OpenAPI document
 * (`npm run openapi:client`: openapi-typescript writes ./gatehouse-api.d.ts, openapi-fetch calls it).
 * CI compiles it with `tsc --strict` and `test/client-walkthrough.e2e-spec.ts` runs it against the
 * app, so a change to the API that would break a generated client fails CI.
 */
import createClient, { type Client } from 'openapi-fetch';
import type { components, paths } from './gatehouse-api';

type Problem = components['schemas']['ProblemSchema'];

export interface WalkthroughResult {
  keyId: string;
  verifiedRole: string;
  fileId: string;
  task: components['schemas']['TaskResponse'];
  rotatedKeyWorks: boolean;
  auditActions: string[];
  statusAfterDelete: number;
}

/** The answer's data, or an error naming the call and the problem's code. */
function must<T>(call: string, answer: { data?: T; error?: unknown; response: Response }): T {
  if (answer.data !== undefined) return answer.data;
  const problem = answer.error as Partial<Problem> | undefined;
  throw new Error(`${call}: ${answer.response.status} ${problem?.code ?? ''} ${problem?.detail ?? ''}`);
}

const as = (baseUrl: string, credential: string): Client<paths> =>
  createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${credential}` } });

export async function walkthrough(
  baseUrl: string,
  admin: { email: string; password: string },
): Promise<WalkthroughResult> {
  const anonymous = createClient<paths>({ baseUrl });

  // Sign in: a short-lived access token for key management.
  const token = must('sign in', await anonymous.POST('/v1/auth/token', { body: admin }));
  const operator = as(baseUrl, token.access_token);

  // A service key that expires in 30 days.
  const expiration = new Date(Date.now() + 30 * 86_400_000).toISOString();
  const created = must(
    'create key',
    await operator.POST('/v1/api-keys', {
      body: { name: 'walkthrough', role: 'developer', type: 'service', expiration },
    }),
  );
  const withKey = as(baseUrl, created.key);
  const verified = must('verify', await withKey.GET('/v1/auth/verify'));

  // Upload a file with the key, then a task that uses it, until it is done.
  const file = must(
    'upload',
    await withKey.POST('/v1/files', {
      body: { file: 'notes for the agent', purpose: 'task_input' },
      bodySerializer: (body) => {
        const form = new FormData();
        form.append('file', new Blob([body.file], { type: 'text/plain' }), 'notes.txt');
        if (body.purpose) form.append('purpose', body.purpose);
        return form;
      },
    }),
  );
  let task = must(
    'create task',
    await withKey.POST('/v1/tasks', {
      body: { instruction: 'Summarise the notes', agent_type: 'echo', attachments: [file.id] },
    }),
  );
  for (let polls = 0; task.status === 'queued' || task.status === 'running'; polls++) {
    if (polls > 200) throw new Error(`task ${task.id} still ${task.status}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    task = must('read task', await withKey.GET('/v1/tasks/{id}', { params: { path: { id: task.id } } }));
  }

  // Rotate with a grace period: the new value works at once.
  const rotated = must(
    'rotate',
    await operator.POST('/v1/api-keys/{id}/rotate', {
      params: { path: { id: created.id } },
      body: { grace_period_seconds: 60 },
    }),
  );
  const rotatedKeyWorks = (await as(baseUrl, rotated.key).GET('/v1/auth/verify')).response.ok;

  // The key's audit log, then delete it: its values are refused from then on.
  const audit = must(
    'audit log',
    await operator.GET('/v1/api-keys/{id}/audit-log', { params: { path: { id: created.id } } }),
  );
  const deleted = await operator.DELETE('/v1/api-keys/{id}', { params: { path: { id: created.id } } });
  if (deleted.response.status !== 204) throw new Error(`delete: ${deleted.response.status}`);
  const afterDelete = await as(baseUrl, rotated.key).GET('/v1/auth/verify');

  return {
    keyId: created.id,
    verifiedRole: verified.role,
    fileId: file.id,
    task,
    rotatedKeyWorks,
    auditActions: audit.data.map((entry) => entry.action),
    statusAfterDelete: afterDelete.response.status,
  };
}
