/**
 * The client, end to end: sign in, a key with an expiration, verify it (as its holder and as a service
 * it was presented to), upload a file and read it back, a task followed through its event stream, the
 * audit log with names, rotate, delete, and the error a deleted key gets.
 *
 * Run against a server: `GATEHOUSE_URL=http://localhost:3000 GATEHOUSE_EMAIL=… GATEHOUSE_PASSWORD=… \
 * npx ts-node --project clients/typescript/tsconfig.json clients/typescript/example.ts`.
 * CI runs it against the app (test/client-walkthrough.e2e-spec.ts) and compiles it with `tsc --strict`.
 */
import {
  createGatehouseClient,
  downloadFile,
  GatehouseError,
  type Problem,
  type Schemas,
  streamTaskEvents,
} from './src';

export interface ExampleResult {
  keyId: string;
  verifiedRole: string;
  serviceVerdict: Schemas['VerifyKeyResponse']['code'];
  fileId: string;
  fileText: string;
  statuses: string[];
  lastSeen: number;
  afterResume: number;
  task: Schemas['TaskResponse'];
  rotatedKeyWorks: boolean;
  auditActions: string[];
  auditActorNames: (string | null | undefined)[];
  afterDelete: { status: number; code: string | undefined };
}

/** The answer's data, or a GatehouseError with the answer's status and problem. */
function must<T>(answer: { data?: T; error?: unknown; response: Response }): T {
  if (answer.response.ok && answer.data !== undefined) return answer.data;
  throw new GatehouseError(answer.response.status, answer.error as Partial<Problem> | undefined);
}

export async function example(
  baseUrl: string,
  admin: { email: string; password: string },
): Promise<ExampleResult> {
  // Sign in: a short-lived access token for managing keys.
  const token = must(await createGatehouseClient(baseUrl).POST('/v1/auth/token', { body: admin }));
  const operator = createGatehouseClient(baseUrl, token.access_token);

  // A service key that expires in 30 days; `enabled` and the rest take the server's defaults.
  const expiration = new Date(Date.now() + 30 * 86_400_000).toISOString();
  const created = must(
    await operator.POST('/v1/api-keys', {
      body: { name: 'client example', role: 'developer', type: 'service', expiration },
    }),
  );

  // Its holder checks it; a service it was presented to verifies it.
  const withKey = createGatehouseClient(baseUrl, created.key);
  const verified = must(await withKey.GET('/v1/auth/verify'));
  const verdict = must(await operator.POST('/v1/keys/verify', { body: { key: created.key } }));

  // Upload a file with the key and read its bytes back (not JSON: downloadFile reads a Blob).
  const file = must(
    await withKey.POST('/v1/files', {
      body: { file: 'notes for the agent', purpose: 'task_input' },
      // A multipart body: openapi-fetch sends JSON unless told how to serialise.
      bodySerializer: (body) => {
        const form = new FormData();
        form.append('file', new Blob([body.file], { type: 'text/plain' }), 'notes.txt');
        if (body.purpose) form.append('purpose', body.purpose);
        return form;
      },
    }),
  );
  const fileText = await must(await downloadFile(withKey, file.id)).text();

  // A task that reads the file, followed through its events until it ends.
  const queued = must(
    await withKey.POST('/v1/tasks', {
      body: { instruction: 'Summarise the notes', agent_type: 'echo', attachments: [file.id] },
    }),
  );
  // Each event is typed by its `type`: status, progress, output (an answer streamed in pieces), usage, file.
  const statuses: string[] = [];
  let lastSeen = 0;
  for await (const event of streamTaskEvents(withKey, queued.id)) {
    if (event.type === 'status') statuses.push(event.data.status);
    lastSeen = event.seq;
  }
  // A dropped stream resumes after the last event it delivered: here nothing, as the task has ended.
  let afterResume = 0;
  for await (const _event of streamTaskEvents(withKey, queued.id, { lastEventId: lastSeen })) afterResume++;
  const task = must(await withKey.GET('/v1/tasks/{id}', { params: { path: { id: queued.id } } }));

  // Rotate with a grace period: the new value works at once (the body is optional: no grace period).
  const rotated = must(
    await operator.POST('/v1/api-keys/{id}/rotate', {
      params: { path: { id: created.id } },
      body: { grace_period_seconds: 60 },
    }),
  );
  const rotatedKeyWorks = (await createGatehouseClient(baseUrl, rotated.key).GET('/v1/auth/verify')).response
    .ok;

  // The key's audit log, with the actors' names (`?expand=actor`).
  const audit = must(
    await operator.GET('/v1/api-keys/{id}/audit-log', {
      params: { path: { id: created.id }, query: { expand: ['actor', 'key'] } },
    }),
  );

  // Delete it: from then on its values are refused, with a problem document saying why.
  const deleted = await operator.DELETE('/v1/api-keys/{id}', { params: { path: { id: created.id } } });
  if (deleted.response.status !== 204) throw new GatehouseError(deleted.response.status, deleted.error);
  const refused = await createGatehouseClient(baseUrl, rotated.key).GET('/v1/auth/verify');

  return {
    keyId: created.id,
    verifiedRole: verified.role,
    serviceVerdict: verdict.code,
    fileId: file.id,
    fileText,
    statuses,
    lastSeen,
    afterResume,
    task,
    rotatedKeyWorks,
    auditActions: audit.data.map((entry) => entry.action),
    auditActorNames: audit.data.map((entry) => entry.actor.name),
    afterDelete: { status: refused.response.status, code: refused.error?.code },
  };
}

// Run directly (not imported by the test): against GATEHOUSE_URL, as GATEHOUSE_EMAIL.
if (require.main === module) {
  const { GATEHOUSE_URL, GATEHOUSE_EMAIL, GATEHOUSE_PASSWORD } = process.env;
  if (!GATEHOUSE_URL || !GATEHOUSE_EMAIL || !GATEHOUSE_PASSWORD) {
    console.error('Set GATEHOUSE_URL, GATEHOUSE_EMAIL and GATEHOUSE_PASSWORD.');
    process.exit(2);
  }
  example(GATEHOUSE_URL, { email: GATEHOUSE_EMAIL, password: GATEHOUSE_PASSWORD }).then(
    (result) => process.stdout.write(`${JSON.stringify(result, null, 2)}\n`),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
