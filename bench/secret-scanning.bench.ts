/**
 * How long a GitHub secret-scanning report of 3,000 tokens takes to answer (GitHub gives a partner a few
 * seconds): the app in this process on a fresh PostgreSQL database (BENCH_DATABASE_URL, default the local
 * server), a local public-keys document, and reports signed by a key pair made here. Three cases: 3,000
 * well-formed values that name no key (the usual report), 3,000 active keys (each revoked, audited and
 * sent as two events: the worst case), and the same report again (nothing left to do).
 *
 *   npm run bench:leaks
 */
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { generateKeyPairSync, sign } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiKeyFormat } from '../src/api-keys/api-key-format';
import { AppModule } from '../src/app.module';
import { APP_OPTIONS, configureApp } from '../src/app.setup';
import { loadAppConfig } from '../src/config/app-config';
import { StableShapeExpressAdapter } from '../src/http/stable-shape.adapter';
import { QUIET_INSTANCE_ENV } from '../test/support/quiet-instance';
import { freshDatabase } from './bench-database';

const TOKENS = 3000;
const RUNS = 5;

async function main(): Promise<void> {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const keysServer = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        public_keys: [
          {
            key_identifier: 'bench',
            key: publicKey.export({ type: 'spki', format: 'pem' }),
            is_current: true,
          },
        ],
      }),
    );
  });
  await new Promise<void>((resolve) => keysServer.listen(0, '127.0.0.1', resolve));
  const keysUrl = `http://127.0.0.1:${(keysServer.address() as AddressInfo).port}/`;

  const database = await freshDatabase(
    process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres',
    'bench_leaks',
  );
  // Configured as a test instance is: quiet, fast hashing, no workers.
  const config = loadAppConfig({
    ...QUIET_INSTANCE_ENV,
    DATABASE_URL: database.url,
    DATA_DIR: mkdtempSync(join(tmpdir(), 'bench-leaks-')),
    SECRET_SCANNING_KEYS_URL: keysUrl,
    DEFAULT_REQUESTS_PER_MINUTE: '1000000',
    DEFAULT_REQUESTS_PER_HOUR: '1000000',
  });
  const app = await NestFactory.create(
    AppModule.forRoot(config),
    new StableShapeExpressAdapter(),
    APP_OPTIONS,
  );
  configureApp(app);
  await app.listen(0, '127.0.0.1');
  const base = await app.getUrl();
  try {
    const call = async (path: string, init: RequestInit & { json?: unknown } = {}) => {
      const res = await fetch(`${base}${path}`, {
        ...init,
        headers: { 'content-type': 'application/json', ...(init.headers as Record<string, string>) },
        body: init.json === undefined ? init.body : JSON.stringify(init.json),
      });
      const body = (await res.json()) as any;
      if (res.status >= 300) throw new Error(`${path} answered ${res.status}: ${JSON.stringify(body)}`);
      return body;
    };
    const signup = await call('/v1/auth/signup', {
      method: 'POST',
      json: {
        organization_name: 'Bench',
        email: 'bench@example.test',
        password: 'bench-password-1',
        name: 'B',
      },
    });
    const auth = { authorization: `Bearer ${signup.access_token}` };
    const values: string[] = [];
    for (let i = 0; i < TOKENS; i += 50) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(50, TOKENS - i) }, (_, j) =>
          call('/v1/api-keys', {
            method: 'POST',
            headers: auth,
            json: { name: `k${i + j}`, role: 'viewer', type: 'service' },
          }),
        ),
      );
      values.push(...batch.map((key) => key.key as string));
    }

    const report = async (tokens: string[]): Promise<{ ms: number; positives: number }> => {
      const body = JSON.stringify(
        tokens.map((token, i) => ({
          token,
          type: 'gatehouse_api_key',
          url: `https://github.com/acme/app/blob/0123456789abcdef/config/${i}.env`,
          source: 'commit',
        })),
      );
      const signature = sign('sha256', Buffer.from(body), { key: privateKey, dsaEncoding: 'der' }).toString(
        'base64',
      );
      const started = performance.now();
      const labels = (await call('/v1/secret-scanning/github', {
        method: 'POST',
        headers: { 'Github-Public-Key-Identifier': 'bench', 'Github-Public-Key-Signature': signature },
        body,
      })) as { label: string }[];
      const ms = performance.now() - started;
      return { ms, positives: labels.filter((entry) => entry.label === 'true_positive').length };
    };
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

    const format = new ApiKeyFormat('sk');
    await report([format.generate()]); // reads the public keys once
    const unknown: number[] = [];
    for (let run = 0; run < RUNS; run += 1) {
      unknown.push((await report(Array.from({ length: TOKENS }, () => format.generate()))).ms);
    }
    const revoking = await report(values);
    const again = await report(values);
    console.log(`secret-scanning report of ${TOKENS} tokens (PostgreSQL, one process):`);
    console.log(
      `  no key named:        median ${median(unknown).toFixed(0)} ms of ${RUNS} (${unknown.map((ms) => ms.toFixed(0)).join(', ')})`,
    );
    console.log(`  ${revoking.positives} active keys revoked: ${revoking.ms.toFixed(0)} ms`);
    console.log(`  the same report again: ${again.ms.toFixed(0)} ms (${again.positives} true positives)`);
  } finally {
    await app.close();
    keysServer.close();
    await database.drop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
