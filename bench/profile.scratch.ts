// scratch: CPU profile of bench-server under verify load
import autocannon from 'autocannon';
import { fork } from 'node:child_process';
import { join } from 'node:path';
import { freshDatabase } from './bench-database';

async function main() {
  const db = await freshDatabase(process.env.DATABASE_URL!, 'prof');
  const child = fork(join(__dirname, 'bench-server.ts'), [], {
    execArgv: ['-r', 'ts-node/register/transpile-only', '--cpu-prof', '--cpu-prof-dir=/tmp/prof'],
    env: { ...process.env, DATABASE_URL: db.url },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const ready: any = await new Promise((r) => child.on('message', (m: any) => m.type === 'ready' && r(m)));
  const appUrl = ready.appUrl;
  const post = async (path: string, body: unknown, token?: string) => {
    const res = await fetch(`${appUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
    return res.json() as any;
  };
  const { access_token } = await post('/v1/auth/signup', {
    organization_name: 'B',
    email: 'b@example.test',
    password: 'bench-password',
    name: 'B',
  });
  const { key } = await post(
    '/v1/api-keys',
    {
      name: 'b',
      role: 'developer',
      type: 'service',
      rate_limit: { requests_per_minute: 1_000_000, requests_per_hour: 60_000_000 },
    },
    access_token,
  );
  const path = process.env.PROF_PATH ?? '/v1/auth/verify';
  const r = await autocannon({
    url: appUrl + path,
    connections: Number(process.env.PROF_CONNECTIONS ?? 50),
    duration: Number(process.env.PROF_SECONDS ?? 10),
    method: (process.env.PROF_METHOD ?? 'GET') as 'GET',
    body: process.env.PROF_BODY,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
  });
  console.log('rps', r.requests.average, 'non2xx', r.non2xx);
  child.send({ type: 'exit' });
  await new Promise((r) => child.on('exit', r));
  await db.drop();
}
main();
