/**
 * `npm run bench`: GET /v1/auth/verify with a valid key through the full guard chain (credential,
 * restrictions, permission, rate limit, concurrency) against a bare NestJS route in the same server
 * process, same connections and duration; then again with 100,000 keys in the table.
 *
 * Timings on a shared 2-core machine drift from second to second (the bare route alone moves by a
 * third), so the two routes are measured in many short rounds, back to back, and the ratio is taken
 * within each round: the reported ratio is the median of those paired ratios, with their range.
 */
import autocannon from 'autocannon';
import { fork } from 'node:child_process';
import { join } from 'node:path';

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const DURATION = Number(process.env.BENCH_DURATION ?? 2);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 11);
const FILLER_KEYS = Number(process.env.BENCH_KEYS ?? 100_000);

interface Sample {
  rps: number;
  p50: number;
  p99: number;
  /** Server CPU time per request (user + system, µs): steadier than req/s on a shared machine. */
  cpu: number;
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

function summarise(samples: Sample[]): Sample {
  return {
    rps: median(samples.map((s) => s.rps)),
    p50: median(samples.map((s) => s.p50)),
    p99: median(samples.map((s) => s.p99)),
    cpu: median(samples.map((s) => s.cpu)),
  };
}

async function main(): Promise<void> {
  const child = fork(join(__dirname, 'bench-server.ts'), [], {
    execArgv: ['-r', 'ts-node/register/transpile-only'],
    env: { ...process.env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const next = <T>(type: string): Promise<T> =>
    new Promise((resolve) => {
      const onMessage = (message: { type: string }): void => {
        if (message.type === type) {
          child.off('message', onMessage);
          resolve(message as T);
        }
      };
      child.on('message', onMessage);
    });
  const { appUrl, bareUrl } = await next<{ appUrl: string; bareUrl: string }>('ready');
  const serverCpu = async (): Promise<number> => {
    const reply = next<{ micros: number }>('cpu');
    child.send({ type: 'cpu' });
    return (await reply).micros;
  };
  const measure = async (url: string, headers: Record<string, string> = {}): Promise<Sample> => {
    const before = await serverCpu();
    const result = await autocannon({ url, connections: CONNECTIONS, duration: DURATION, headers });
    const cpu = ((await serverCpu()) - before) / result.requests.total;
    if (result.non2xx > 0 || result.errors > 0) {
      throw new Error(`${url}: ${result.non2xx} non-2xx responses, ${result.errors} errors`);
    }
    return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, cpu };
  };

  // An administrator, then ten keys; the last one is measured.
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
  let key = '';
  for (let i = 0; i < 10; i++) {
    const created = await fetch(`${appUrl}/v1/api-keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${signup.access_token}` },
      body: JSON.stringify({
        name: `bench ${i}`,
        role: 'developer',
        type: 'service',
        rate_limit: { requests_per_minute: 1_000_000, requests_per_hour: 60_000_000 },
      }),
    }).then((r) => r.json() as Promise<{ key: string }>);
    key = created.key;
  }
  const auth = { authorization: `Bearer ${key}` };
  const bareRoute = `${bareUrl}/bare`;
  const verifyRoute = `${appUrl}/v1/auth/verify`;

  // Warm-up: JIT, connection pools, the key cache.
  await autocannon({ url: bareRoute, connections: CONNECTIONS, duration: 2 });
  await autocannon({ url: verifyRoute, connections: CONNECTIONS, duration: 2, headers: auth });

  const bare: Sample[] = [];
  const verify10: Sample[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    bare.push(await measure(bareRoute));
    verify10.push(await measure(verifyRoute, auth));
  }

  const { keys } = await (async () => {
    const seeded = next<{ keys: number }>('seeded');
    child.send({ type: 'seed', count: FILLER_KEYS });
    return seeded;
  })();
  await autocannon({ url: verifyRoute, connections: CONNECTIONS, duration: 2, headers: auth });
  const verifyMany: Sample[] = [];
  const bareAgain: Sample[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    bareAgain.push(await measure(bareRoute));
    verifyMany.push(await measure(verifyRoute, auth));
  }
  child.send({ type: 'exit' });

  const rows = [
    ['bare NestJS route', summarise(bare)],
    ['verify, 10 keys', summarise(verify10)],
    [`bare NestJS route (again)`, summarise(bareAgain)],
    [`verify, ${keys} keys`, summarise(verifyMany)],
  ] as const;
  console.log(`\nconnections=${CONNECTIONS} duration=${DURATION}s rounds=${ROUNDS} (medians)`);
  console.log(
    'scenario'.padEnd(28),
    'req/s'.padStart(10),
    'p50 ms'.padStart(8),
    'p99 ms'.padStart(8),
    'cpu µs/req'.padStart(11),
  );
  for (const [name, s] of rows) {
    console.log(
      name.padEnd(28),
      s.rps.toFixed(0).padStart(10),
      String(s.p50).padStart(8),
      String(s.p99).padStart(8),
      s.cpu.toFixed(0).padStart(11),
    );
  }
  const percent = (value: number): string => `${(value * 100).toFixed(1)}%`;
  const ratios = (verify: Sample[], bareRuns: Sample[]): number[] =>
    verify.map((sample, round) => sample.rps / bareRuns[round].rps);
  const describe = (values: number[]): string =>
    `${percent(median(values))}  (rounds from ${percent(Math.min(...values))} to ${percent(Math.max(...values))})`;
  // The key check's own cost, per request: verify's server CPU minus the bare route's, same round.
  const extraCpu = (verify: Sample[], bareRuns: Sample[]): number =>
    median(verify.map((sample, round) => sample.cpu - bareRuns[round].cpu));
  const [few, many] = [ratios(verify10, bare), ratios(verifyMany, bareAgain)];
  console.log(`\nverify / bare, median of ${ROUNDS} paired rounds (target >= 70%):`);
  console.log(`  10 keys:      ${describe(few)}`);
  console.log(`  ${keys} keys: ${describe(many)}`);
  console.log(
    `${keys} keys vs 10 keys: ratio ${percent(median(many) / median(few))} of the 10-key ratio; ` +
      `server CPU above bare ${extraCpu(verifyMany, bareAgain).toFixed(0)} µs/req vs ${extraCpu(verify10, bare).toFixed(0)} µs/req`,
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
