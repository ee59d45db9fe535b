import { Client } from 'pg';

/**
 * A fresh database on the PostgreSQL server `serverUrl` names, for one benchmark run: a run never sees
 * another's rows. `drop()` removes it (connections included) and belongs in a `finally`.
 */
export async function freshDatabase(
  serverUrl: string,
  label: string,
): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `${label}_${process.pid}_${Date.now()}`;
  const admin = async (sql: string): Promise<void> => {
    const client = new Client({ connectionString: serverUrl });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE "${name}"`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`) };
}
