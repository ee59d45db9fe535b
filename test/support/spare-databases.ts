import { Client } from 'pg';
import { setTimeout as sleep } from 'node:timers/promises';
import { runDatabasePrefix, withServer } from './test-database';

/**
 * `CREATE DATABASE … TEMPLATE` takes 50–500 ms on this server (it writes every page of the template to the
 * WAL) and `DROP DATABASE` 50–300 ms, and a test file waited for both. The run's main process does them
 * instead, while the workers run tests:
 * - it keeps a few copies of the template ready, and an instance claims one by renaming it (`ALTER DATABASE
 *   … RENAME`: atomic, so two workers never get the same copy); with none ready it creates its own;
 * - an instance done with its database renames it as retired, and the main process drops it later (the
 *   teardown drops whatever is left of the run).
 */

const SPARES = 4;
const IDLE_POLL_MS = 100;

function sparePrefix(runId: string): string {
  return `${runDatabasePrefix(runId)}spare_`;
}

function retiredPrefix(runId: string): string {
  return `${runDatabasePrefix(runId)}retired_`;
}

/** The loop that keeps the spares; lives in jest's main process from the global setup to the teardown. */
export class SpareDatabases {
  private stopping = false;
  private loop: Promise<void> = Promise.resolve();
  private counter = 0;

  private constructor(
    private readonly serverUrl: string,
    private readonly runId: string,
    private readonly template: string,
  ) {}

  /** Starts with one copy ready, so that even a run of a single file finds one. */
  static async start(serverUrl: string, runId: string, template: string): Promise<SpareDatabases> {
    const spares = new SpareDatabases(serverUrl, runId, template);
    await withServer(serverUrl, (client) => spares.createSpare(client));
    spares.loop = spares.keep();
    return spares;
  }

  private createSpare(client: Client): Promise<unknown> {
    const name = `${sparePrefix(this.runId)}${++this.counter}`;
    return client.query(`CREATE DATABASE "${name}" TEMPLATE "${this.template}"`);
  }

  private async keep(): Promise<void> {
    const client = new Client({ connectionString: this.serverUrl });
    try {
      await client.connect();
      while (!this.stopping) {
        const { rows } = await client.query<{ datname: string }>(
          `SELECT datname FROM pg_database WHERE starts_with(datname, $1)`,
          [runDatabasePrefix(this.runId)],
        );
        const names = rows.map((row) => row.datname);
        const retired = names.find((name) => name.startsWith(retiredPrefix(this.runId)));
        if (names.filter((name) => name.startsWith(sparePrefix(this.runId))).length < SPARES)
          await this.createSpare(client);
        else if (retired) await client.query(`DROP DATABASE IF EXISTS "${retired}" WITH (FORCE)`);
        else await sleep(IDLE_POLL_MS);
      }
    } catch (error) {
      // The pool only saves time: instances create their own databases without it.
      if (!this.stopping) console.warn(`spare test databases stopped: ${(error as Error).message}`);
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  /** Stops making spares (before the teardown drops the run's databases, spares included). */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.loop;
  }
}

/** Renames a ready copy of the template to `name`; false when none is ready (the caller creates one). */
export async function claimSpareDatabase(serverUrl: string, runId: string, name: string): Promise<boolean> {
  return withServer(serverUrl, async (client) => {
    const { rows } = await client.query<{ datname: string }>(
      `SELECT datname FROM pg_database WHERE starts_with(datname, $1) ORDER BY datname`,
      [sparePrefix(runId)],
    );
    for (const { datname } of rows) {
      try {
        await client.query(`ALTER DATABASE "${datname}" RENAME TO "${name}"`);
        return true;
      } catch {
        // Another worker renamed it first.
      }
    }
    return false;
  });
}

/**
 * Hands a database the instance is done with to the main process to drop (renamed as retired); drops it
 * here when it cannot be renamed (a connection still open) or the run keeps no spares.
 */
export async function retireDatabase(serverUrl: string, runId: string, name: string): Promise<void> {
  await withServer(serverUrl, async (client) => {
    try {
      const retired = `${retiredPrefix(runId)}${name.slice(runDatabasePrefix(runId).length)}`;
      await client.query(`ALTER DATABASE "${name}" RENAME TO "${retired}"`);
    } catch {
      await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    }
  });
}
