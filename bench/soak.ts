/**
 * `npm run soak`: mixed traffic for SOAK_SECONDS (default 600) against one Gatehouse process, then a
 * report: answers by status, every 5xx (the run fails on any), and the server's RSS sampled every
 * 10 s (memory that only grows is a leak). Not part of CI.
 *
 *   DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres npm run soak
 *
 * With DATABASE_URL a fresh database of that server is used and dropped after; without it, the
 * embedded database. Traffic, from SOAK_CLIENTS loops: key checks, task creation and reads, key
 * creation, rotation and deletion, small uploads, audit reads, and refused requests (bad key,
 * missing permission).
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { nextMessage } from './bench-child';
import { freshDatabase } from './bench-database';

const SECONDS = Number(process.env.SOAK_SECONDS ?? 600);
const CLIENTS = Number(process.env.SOAK_CLIENTS ?? 8);
const RSS_EVERY_MS = 10_000;

async function main(): Promise<void> {
  const database = process.env.DATABASE_URL
    ? await freshDatabase(process.env.DATABASE_URL, 'soak')
    : undefined;
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-soak-'));
  const child = fork(join(__dirname, 'bench-server.ts'), [], {
    execArgv: ['-r', 'ts-node/register/transpile-only'],
    env: { ...process.env, DATABASE_URL: database?.url, DATA_DIR: dataDir, WORKER_CONCURRENCY: '4' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const next = <T>(type: string): Promise<T> => nextMessage<T>(child, type);
  const rss = async (): Promise<number> => {
    const reply = next<{ rss: number }>('memory');
    child.send({ type: 'memory' });
    return (await reply).rss;
  };

  const statuses = new Map<number, number>();
  const serverErrors: string[] = [];
  const rssSamples: number[] = [];
  try {
    const { appUrl } = await next<{ appUrl: string }>('ready');
    const call = async (method: string, path: string, auth: string | undefined, body?: unknown) => {
      const isForm = body instanceof FormData;
      const response = await fetch(`${appUrl}${path}`, {
        method,
        headers: {
          ...(auth ? { authorization: auth } : {}),
          ...(body !== undefined && !isForm ? { 'content-type': 'application/json' } : {}),
        },
        body: body === undefined ? undefined : isForm ? body : JSON.stringify(body),
      });
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      const text = await response.text();
      if (response.status >= 500)
        serverErrors.push(`${method} ${path} -> ${response.status} ${text.slice(0, 200)}`);
      return { status: response.status, json: text ? JSON.parse(text) : undefined };
    };
    const signup = await call('POST', '/v1/auth/signup', undefined, {
      organization_name: 'Soak',
      email: 'soak@example.test',
      password: 'soak-password',
      name: 'Soak',
    });
    const admin = `Bearer ${signup.json.access_token}`;
    const newKey = async (role: string) =>
      (
        await call('POST', '/v1/api-keys', admin, {
          name: `soak ${role}`,
          role,
          type: 'service',
          // The soak is about errors and memory, not about the default limits refusing it.
          rate_limit: { requests_per_minute: 1_000_000, requests_per_hour: 60_000_000 },
        })
      ).json;
    const developer = `Bearer ${(await newKey('developer')).key}`;
    const viewer = `Bearer ${(await newKey('viewer')).key}`;

    const deadline = Date.now() + SECONDS * 1000;
    const loop = async (lane: number): Promise<void> => {
      for (let i = 0; Date.now() < deadline; i++) {
        await call('GET', '/v1/auth/verify', developer);
        const task = await call('POST', '/v1/tasks', developer, {
          instruction: `soak ${lane}.${i}`,
          agent_type: 'echo',
        });
        if (task.json?.id) await call('GET', `/v1/tasks/${task.json.id}`, developer);
        await call('GET', '/v1/tasks?limit=5', viewer);
        await call('POST', '/v1/tasks', viewer, { instruction: 'refused', agent_type: 'echo' });
        await call('GET', '/v1/auth/verify', 'Bearer sk_not_a_real_key');
        if (i % 10 === 0) {
          const key = (
            await call('POST', '/v1/api-keys', admin, { name: `churn ${lane}.${i}`, role: 'viewer' })
          ).json;
          if (key?.id) {
            await call('POST', `/v1/api-keys/${key.id}/rotate`, admin, { grace_period_seconds: 0 });
            await call('DELETE', `/v1/api-keys/${key.id}`, admin);
          }
          const form = new FormData();
          form.append('file', new Blob([`soak ${lane}.${i}`]), 'soak.txt');
          const file = (await call('POST', '/v1/files', developer, form)).json;
          if (file?.id) await call('DELETE', `/v1/files/${file.id}`, developer);
          await call('GET', '/v1/audit-log?limit=20', admin);
        }
      }
    };
    const sampler = (async () => {
      while (Date.now() < deadline) {
        rssSamples.push(await rss());
        await sleep(Math.min(RSS_EVERY_MS, Math.max(0, deadline - Date.now())));
      }
      rssSamples.push(await rss());
    })();
    await Promise.all([...Array.from({ length: CLIENTS }, (_, lane) => loop(lane)), sampler]);
  } finally {
    child.send({ type: 'exit' });
    await new Promise((resolve) => child.once('exit', resolve));
    rmSync(dataDir, { recursive: true, force: true });
    await database?.drop();
  }

  const total = [...statuses.values()].reduce((sum, count) => sum + count, 0);
  const mib = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;
  console.log(`\nsoak: ${SECONDS} s, ${CLIENTS} clients, ${database ? 'PostgreSQL' : 'embedded PGlite'}`);
  console.log(`requests: ${total} (${(total / SECONDS).toFixed(0)}/s)`);
  console.log(
    'by status:',
    [...statuses.entries()]
      .sort(([a], [b]) => a - b)
      .map(([status, count]) => `${status}: ${count}`)
      .join(', '),
  );
  console.log(`5xx: ${serverErrors.length}`);
  for (const error of serverErrors.slice(0, 10)) console.log(`  ${error}`);
  console.log(`server RSS every ${RSS_EVERY_MS / 1000} s: ${rssSamples.map(mib).join(' ')}`);
  const half = Math.floor(rssSamples.length / 2);
  console.log(
    `RSS: first half max ${mib(Math.max(...rssSamples.slice(0, half)))}, second half max ${mib(Math.max(...rssSamples.slice(half)))}`,
  );
  if (serverErrors.length) process.exit(1);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
