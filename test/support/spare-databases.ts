import { Client } from 'pg';
import { setTimeout as sleep } from 'node:timers/promises';
import { withServer } from './test-database';

/**
 * `CREATE DATABASE … TEMPLATE` takes 50–500 ms on this server (it writes every page of the template to the
 * WAL) and `DROP DATABASE` 50–300 ms, and a test file waited for both. The run's main process does them
 * instead, while the workers run tests:
 * - it keeps a few copies of the template ready, and an instance claims one by renaming it (`ALTER DATABASE
 *   … RENAME`: atomic, so two workers never get the same copy); with none ready it creates its own;
 * - an instance done with its database renames it as retired, and the main process drops it later.
 * Spares and retired databases outlive the run: the next run of the same template starts with copies
 * ready and drops what this one retired, so neither waits at a run's start or end (a run of one file
 * would wait for both). Spares go with their template when it is removed as stale (template-database.ts).
 */

const SPARES = 4;
const IDLE_POLL_MS = 100;
const RETIRED_PREFIX = 'test_gh_retired_';

/** Copies of a template (`test_gh_template_<fingerprint>`) are named `test_gh_spare_<fingerprint>_…`. */
export function sparePrefix(template: string): string {
  return `${template.replace('_template_', '_spare_')}_`;
}

/** The loop that keeps the spares; lives in jest's main process from the global setup to the teardown. */
export class SpareDatabases {
  private stopping = false;
  private loop: Promise<void> = Promise.resolve();
  private readonly client: Client;
  private connected: Promise<unknown> = Promise.resolve();
  private counter = 0;

  private constructor(
    serverUrl: string,
    private readonly runId: string,
    private readonly template: string,
  ) {
    this.client = new Client({ connectionString: serverUrl });
  }

  /**
   * Starts making copies without waiting for one: a test file takes longer to load than a copy takes to
   * make, and an instance that finds none ready makes its own.
   */
  static start(serverUrl: string, runId: string, template: string): SpareDatabases {
    const spares = new SpareDatabases(serverUrl, runId, template);
    spares.connected = spares.client.connect();
    spares.loop = spares.keep();
    return spares;
  }

  private async keep(): Promise<void> {
    const { client } = this;
    try {
      await this.connected;
      while (!this.stopping) {
        const { rows } = await client.query<{ datname: string }>(
          `SELECT datname FROM pg_database WHERE starts_with(datname, $1) OR starts_with(datname, $2)`,
          [sparePrefix(this.template), RETIRED_PREFIX],
        );
        const spares = rows.filter((row) => row.datname.startsWith(sparePrefix(this.template))).length;
        const retired = rows.find((row) => row.datname.startsWith(RETIRED_PREFIX))?.datname;
        if (spares < SPARES) {
          const spare = `${sparePrefix(this.template)}${this.runId}_${++this.counter}`;
          await client.query(`CREATE DATABASE "${spare}" TEMPLATE "${this.template}"`);
        } else if (retired) await client.query(`DROP DATABASE IF EXISTS "${retired}" WITH (FORCE)`);
        else await sleep(IDLE_POLL_MS);
      }
    } catch (error) {
      // The pool only saves time: instances create their own databases without it.
      if (!this.stopping) console.warn(`spare test databases stopped: ${(error as Error).message}`);
    }
  }

  /**
   * Stops making spares. Does not wait for a copy being made: ending the connection either leaves it
   * whole, a spare for the next run, or undoes it.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    // Ending a connection still being opened would leave the loop waiting on it for good.
    await this.connected.catch(() => undefined);
    await this.client.end().catch(() => undefined);
    await this.loop;
  }
}

/** Renames a ready copy of `template` to `name`; false when none is ready (the caller creates one). */
export async function claimSpareDatabase(
  serverUrl: string,
  template: string,
  name: string,
): Promise<boolean> {
  return withServer(serverUrl, async (client) => {
    const { rows } = await client.query<{ datname: string }>(
      `SELECT datname FROM pg_database WHERE starts_with(datname, $1) ORDER BY datname`,
      [sparePrefix(template)],
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
 * Hands a database (`test_gh_<run>_…`) the instance is done with to a spare loop to drop, renamed as
 * retired; drops it here when it cannot be renamed.
 *
 * Its sessions are ended first. The instance has closed its own, but a transaction pooler in between
 * (GATEHOUSE_TEST_POOLER_URL) keeps its server connections open after the app's end, and PostgreSQL waits
 * 5 s for other sessions before it refuses a RENAME: that was 5 s on every instance's close.
 */
export async function retireDatabase(serverUrl: string, name: string): Promise<void> {
  await withServer(serverUrl, async (client) => {
    await client.query(
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
      [name],
    );
    try {
      await client.query(
        `ALTER DATABASE "${name}" RENAME TO "${RETIRED_PREFIX}${name.slice('test_gh_'.length)}"`,
      );
    } catch {
      await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    }
  });
}
