import type autocannon from 'autocannon';
import { type ChildProcess, fork } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { type Agent, request } from 'node:http';
import { COMPILED_APP_ENV } from './compiled-servers';

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

/** Throws unless every response was 2xx, with no error or timeout. */
export function assertClean(label: string, result: autocannon.Result): void {
  if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0 || result.requests.total === 0) {
    const statuses = Object.entries(result.statusCodeStats ?? {})
      .map(([status, { count }]) => `${status}: ${count}`)
      .join(', ');
    throw new Error(
      `${label}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts ` +
        `of ${result.requests.total} requests (status codes ${statuses || 'none'}); the figures would mean nothing`,
    );
  }
}

/** The median of `values` (the mean of the middle two for an even count). */
export const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

/** POSTs `body` as JSON to the app and reads its JSON answer; anything but a 2xx throws, with the body. */
export async function postJson<T>(appUrl: string, path: string, body: unknown, token?: string): Promise<T> {
  const response = await fetch(`${appUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`POST ${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

/** A compiled server process (compiled-servers.ts) driven over IPC: bench-server.ts or bare-server.ts. */
export interface BenchServer {
  child: ChildProcess;
  /** The next message of `type`; rejects if the process exits first. */
  next<T>(type: string): Promise<T>;
  /** Its CPU time so far (user + system, µs). */
  cpu(): Promise<number>;
  stop(): Promise<void>;
}

/**
 * Forks `compiledFile` (named `label` in errors); `logFile`: where its standard output goes (Gatehouse's
 * request lines), else this process's.
 */
export function startBenchServer(
  label: string,
  compiledFile: string,
  env: NodeJS.ProcessEnv,
  logFile?: string,
): BenchServer {
  const stdout = logFile ? openSync(logFile, 'a') : 'inherit';
  // BENCH_CPU_PROF=<dir>: each server writes a V8 CPU profile there when it exits, named after it
  // (summarize one with scripts/cpu-profile-summary.js).
  const profileDir = process.env.BENCH_CPU_PROF;
  const profileName = `${label.replace(/[^\w.-]+/g, '_')}-${Date.now()}.cpuprofile`;
  const child = fork(compiledFile, [], {
    execArgv: profileDir
      ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${profileName}`]
      : [],
    env: { ...env, ...COMPILED_APP_ENV },
    stdio: ['ignore', stdout, 'inherit', 'ipc'],
  });
  if (typeof stdout === 'number') closeSync(stdout);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const next = <T>(type: string): Promise<T> =>
    new Promise((resolve, reject) => {
      const onMessage = (message: { type: string }): void => {
        if (message.type !== type) return;
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(message as T);
      };
      const onExit = (code: number | null): void => {
        child.off('message', onMessage);
        const hint = logFile ? ` (its log: ${logFile})` : '';
        reject(new Error(`${label} exited (${code}) while the bench waited for '${type}'${hint}`));
      };
      child.on('message', onMessage);
      child.once('exit', onExit);
    });
  return {
    child,
    next,
    async cpu() {
      const reply = next<{ micros: number }>('cpu');
      child.send({ type: 'cpu' });
      return (await reply).micros;
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      // A child still booting has no message handler yet: it is killed after the grace period.
      await stopChild(child, exited, 10_000);
    },
  };
}

/**
 * A JSON client of the bench's server over node:http and the given agent (fetch costs the client several
 * times the CPU per request, on the machine the server shares): the parsed answer of a 2xx, an error naming
 * the request otherwise.
 */
export function jsonApi(appUrl: string, headers: Record<string, string>, connections: Agent) {
  return <T>(method: string, path: string, body?: unknown): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const req = request(
        `${appUrl}${path}`,
        {
          method,
          agent: connections,
          headers: {
            ...headers,
            ...(payload === undefined
              ? {}
              : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            const status = res.statusCode ?? 0;
            if (status < 200 || status >= 300) reject(new Error(`${method} ${path}: ${status} ${text}`));
            else resolve((status === 204 ? undefined : JSON.parse(text)) as T);
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
}
