import { Client } from 'pg';

/** The database name a test run may touch must say so; protects a real database from a stray URL. */
export function assertTestDatabaseName(url: string): string {
  const name = decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));
  if (!/test/i.test(name)) {
    throw new Error(`Refusing to run tests against database "${name}": its name must contain "test".`);
  }
  return name;
}

export function withDatabaseName(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return parsed.toString();
}

export async function withServer<T>(serverUrl: string, run: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: serverUrl });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

/** Databases of this run are named `test_gh_<run>_<n>`, so teardown can find leftovers of a crash. */
export function runDatabasePrefix(runId: string): string {
  return `test_gh_${runId}_`;
}

/** Names what one test run keeps on disk (compiled app, OpenAPI metadata): its id, else this process. */
export function runScope(): string {
  return process.env.GATEHOUSE_TEST_RUN_ID ?? `pid${process.pid}`;
}
