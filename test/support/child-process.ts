import { ChildProcess, spawn } from 'node:child_process';

/** What a child process printed, and how it ended (nulls while it runs). */
export interface ChildOutput {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export type CapturedChild = ChildProcess & { output: () => ChildOutput };

/** Spawns `command` with only the environment given, collecting its output. */
export function spawnCaptured(
  command: string,
  args: string[],
  { cwd, env }: { cwd: string; env: NodeJS.ProcessEnv },
): CapturedChild {
  const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return Object.assign(child, {
    output: () => ({ code: child.exitCode, signal: child.signalCode, stdout, stderr }),
  });
}

/** Resolves when the child has exited; kills it (and reports `timedOut`) if it outlives `ms`. */
export function exited(child: CapturedChild, ms: number): Promise<ChildOutput & { timedOut: boolean }> {
  return new Promise((done) => {
    if (child.exitCode !== null || child.signalCode !== null)
      return done({ ...child.output(), timedOut: false });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      child.once('close', () => done({ ...child.output(), timedOut: true }));
    }, ms);
    child.once('close', () => {
      clearTimeout(timer);
      done({ ...child.output(), timedOut: false });
    });
  });
}

/** Waits until the server `child` answers GET /health/live at `base`, failing with its stderr if it exits or takes over `ms`. */
export async function waitUntilLive(child: CapturedChild, base: string, ms: number): Promise<void> {
  for (const deadline = Date.now() + ms; Date.now() < deadline;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`the server exited before serving:\n${child.output().stderr}`);
    }
    const live = await fetch(`${base}/health/live`, { signal: AbortSignal.timeout(2000) })
      .then((res) => res.ok)
      .catch(() => false);
    if (live) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`the server did not serve within ${ms} ms:\n${child.output().stderr}`);
}
