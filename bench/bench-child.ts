import type { ChildProcess } from 'node:child_process';

/**
 * What the benches that fork bench-server.ts (and bench/slow-agent.ts) share: talking to the child over
 * IPC, stopping it, signing up, and the figures they report.
 */

/** Waits for the first message of `type` from a forked process. */
export const nextMessage = <T>(child: ChildProcess, type: string): Promise<T> =>
  new Promise((resolve) => {
    const onMessage = (message: { type: string }): void => {
      if (message.type === type) {
        child.off('message', onMessage);
        resolve(message as T);
      }
    };
    child.on('message', onMessage);
  });

/**
 * Asks a forked process to exit and waits for `exited` (its `once(child, 'exit')`, taken when it was
 * forked); kills it if it has not exited after `graceMs`.
 */
export async function stopChild(
  child: ChildProcess,
  exited: Promise<unknown>,
  graceMs: number,
): Promise<void> {
  if (child.connected) child.send({ type: 'exit' });
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/**
 * Signs up the bench's organization on a fresh server and returns its user's access token: with a user
 * token, per-key rate limits and concurrency caps do not apply, so they do not shape the figures.
 */
export async function signUpForBench(appUrl: string): Promise<string> {
  const signup = await fetch(`${appUrl}/v1/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      organization_name: 'Bench',
      email: 'bench@example.test',
      password: 'bench-password',
      name: 'Bench',
    }),
  }).then((r) => r.json() as Promise<{ access_token: string }>);
  return signup.access_token;
}

/** The `p`th percentile of `values` (nearest rank). */
export const percentile = (values: number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
};
