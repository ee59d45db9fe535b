import { mkdtempSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import request from 'supertest';
import { CapturedChild, ChildOutput, exited, spawnCaptured } from './child-process';
import { compiledEntryPoint } from './compiled-app';
import { SCRATCH_ROOT } from './scratch-directory';
import { copyEmbeddedTemplate } from './template-database';

/**
 * The real entry point as a child process, for the specs that start it (process-start.e2e-spec.ts,
 * process-lifecycle.e2e-spec.ts): spawning it, reading its log, waiting until it serves, and scratch DATA_DIRs.
 */

const PROJECT_ROOT = resolve(__dirname, '..', '..');

export type ProcessResult = ChildOutput;

/** The real entry point, as a child process with only the environment given (plus PATH and HOME). */
export function spawnMain(
  env: Record<string, string | undefined>,
  { cwd = PROJECT_ROOT }: { cwd?: string } = {},
): CapturedChild {
  return spawnCaptured(process.execPath, [compiledEntryPoint('main')], {
    cwd,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      ...env,
    },
  });
}

/** The worker entry point (src/worker.ts), as `spawnMain` starts the API's. */
export function spawnWorker(env: Record<string, string | undefined>): CapturedChild {
  return spawnCaptured(process.execPath, [compiledEntryPoint('worker')], {
    cwd: PROJECT_ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
  });
}

export async function runMain(
  env: Record<string, string | undefined>,
): Promise<ProcessResult & { timedOut: boolean }> {
  return exited(spawnMain(env), 45_000);
}

/** The JSON lines the process logs when not on a terminal. */
export function logEntriesOf(stdout: string): Array<{ level: number; msg: string; context?: string }> {
  return stdout
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as { level: number; msg: string; context?: string });
}

/** Polls /health/live until the child answers 200; fails at once if the child exits instead. */
export async function waitUntilLive(child: CapturedChild, base: string): Promise<void> {
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`the process exited before serving:\n${child.output().stderr}`);
    }
    const status = await request(base)
      .get('/health/live')
      .timeout(2000)
      .then((res) => res.status)
      .catch(() => 0);
    if (status === 200) return;
    await sleep(200);
  }
}

/** A maker of scratch DATA_DIRs for the calling describe; they are removed after it (its own afterAll). */
export function scratchDataDirs(): () => string {
  const tempDirs: string[] = [];
  // On the embedded run a DATA_DIR starts as a copy of the run's migrated database (as test instances do):
  // a process then spends its start on what the test is about, not on migrating PGlite from nothing.
  const tempDir = (): string => {
    const dir = mkdtempSync(join(SCRATCH_ROOT, 'gatehouse-ops-'));
    copyEmbeddedTemplate(dir);
    tempDirs.push(dir);
    return dir;
  };
  afterAll(() => {
    for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  });
  return tempDir;
}
