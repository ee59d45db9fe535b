import { Client } from 'pg';

/**
 * A fresh database on the PostgreSQL server `serverUrl` names, for one benchmark run: a run never sees
 * another's rows. `drop()` removes it (connections included) and belongs in a `finally`. `env` is what
 * Gatehouse is given to reach it: DATABASE_URL, or with BENCH_POOLER_URL (a transaction pooler in front of
 * that server, e.g. `scripts/pgbouncer.sh start DIR 26432`'s URL) the pool through the pooler and the
 * sessions direct, as DATABASE_POOLER=transaction runs in production.
 */
export async function freshDatabase(
  serverUrl: string,
  label: string,
): Promise<{ url: string; env: Record<string, string>; drop: () => Promise<void> }> {
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
  return {
    url: url.toString(),
    env: throughPooler(url.toString(), process.env.BENCH_POOLER_URL),
    drop: () => admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`),
  };
}

function throughPooler(databaseUrl: string, poolerUrl: string | undefined): Record<string, string> {
  if (!poolerUrl) return { DATABASE_URL: databaseUrl };
  const pooled = new URL(poolerUrl);
  pooled.pathname = new URL(databaseUrl).pathname;
  return {
    DATABASE_URL: pooled.toString(),
    DATABASE_DIRECT_URL: databaseUrl,
    DATABASE_POOLER: 'transaction',
  };
}
