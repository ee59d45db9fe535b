import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { exited, type CapturedChild } from './support/child-process';
import { compiledEntryPoint } from './support/compiled-app';
import { describeWithPostgres } from './support/instances';
import { freeLoopbackPort } from './support/ports';
import { bashBlocks, bashBlocksOfSection } from './support/readme-bash';
import { SCRATCH_ROOT } from './support/scratch-directory';
import { createTestDatabase, dropTestDatabase, instanceDatabaseEnv } from './support/test-instance';
import { checkCompose, COMPOSE_FILE } from '../scripts/compose-check';
import { validateEnvironment } from '../src/config/environment';

/**
 * docs/production.md's deployment without Docker runs as printed: its ```bash blocks (every one on the page,
 * all in "Without Docker"), in a project directory as the guide assumes one (after `npm ci` and a build), on a
 * scratch database of the run's PostgreSQL and the run's Redis. Two API instances and a worker start with
 * `npm start` and `npm run start:worker`; both instances answer /health/ready, a key created on one verifies
 * on the other, a task runs to `succeeded` on the worker (the instances run none), and the guide's stop
 * block ends all three.
 *
 * The project directory holds package.json, the stale-build check and node_modules (a link) of this clone, and
 * dist/ from the run's compiled app with a current build stamp: `npm start` then starts without rebuilding,
 * and nothing the guide writes (.env, logs, pid files, data/) lands in the clone.
 */

const ROOT = resolve(__dirname, '..');
const GUIDE = readFileSync(join(ROOT, 'docs', 'production.md'), 'utf8');
const SECTION = '## Without Docker: two instances and a worker';
const HAS_REDIS = Boolean(process.env.REDIS_URL);
const PATH = `${dirname(process.execPath)}:${process.env.PATH}`;

/** A project directory as after `npm ci && npm run build`, without copying node_modules. */
function projectDirectory(): string {
  const project = mkdtempSync(join(SCRATCH_ROOT, 'gatehouse-production-guide-'));
  cpSync(join(ROOT, 'package.json'), join(project, 'package.json'));
  mkdirSync(join(project, 'scripts'));
  cpSync(join(ROOT, 'scripts', 'build-if-stale.js'), join(project, 'scripts', 'build-if-stale.js'));
  symlinkSync(join(ROOT, 'node_modules'), join(project, 'node_modules'));
  cpSync(dirname(compiledEntryPoint('main')), join(project, 'dist'), { recursive: true });
  // Written last, and a second ahead: no input is newer than the build.
  const stamp = join(project, 'dist', '.build-stamp');
  writeFileSync(stamp, `${new Date().toISOString()}\n`);
  const ahead = new Date(Date.now() + 1000);
  utimesSync(stamp, ahead, ahead);
  return project;
}

/** bash running `file` in its own process group, so that what it leaves running can be ended with it. */
function runBash(file: string, cwd: string, env: NodeJS.ProcessEnv): CapturedChild {
  const child = spawn('bash', [file], { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return Object.assign(child, {
    output: () => ({ code: child.exitCode, signal: child.signalCode, stdout, stderr }),
  });
}

const isRunning = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function json(response: Response): Promise<Record<string, unknown>> {
  const body = await response.text();
  try {
    return JSON.parse(body) as Record<string, unknown>;
  } catch {
    throw new Error(`HTTP ${response.status}, not JSON: ${body}`);
  }
}

describe('docs/production.md with Docker', () => {
  const fenced = (language: string): string[] =>
    [...GUIDE.matchAll(new RegExp(`^\`\`\`${language}\n([\\s\\S]*?)^\`\`\`$`, 'gm'))].map((m) => m[1]);

  it("the docker run example's env file sets every secret production requires", () => {
    let refusal = '';
    try {
      validateEnvironment({ NODE_ENV: 'production' });
    } catch (error) {
      refusal = (error as Error).message;
    }
    const required = [...refusal.matchAll(/(\w+) must be set when NODE_ENV=production/g)].map((m) => m[1]);
    expect(required.length).toBeGreaterThan(0);
    const envFile = fenced('ini').find((block) => block.includes('DATABASE_URL='))!;
    for (const name of [...required, 'DATABASE_URL', 'REDIS_URL', 'TRUST_PROXY']) {
      expect({ name, set: new RegExp(`^${name}=`, 'm').test(envFile) }).toEqual({ name, set: true });
    }
  });

  it('the compose example sets every variable compose.yaml refuses to start without', () => {
    const compose = readFileSync(COMPOSE_FILE, 'utf8');
    const example = fenced('sh').find((block) => block.includes('docker compose up'))!;
    for (const name of checkCompose(compose, {}).missing.keys()) {
      expect({ name, set: new RegExp(`\\b${name}=`).test(example) }).toEqual({ name, set: true });
    }
  });
});

describeWithPostgres('production guide e2e')('docs/production.md without Docker', () => {
  const blocks = bashBlocksOfSection(GUIDE, SECTION);

  it('presents runnable blocks only in that section: the rest needs Docker or a proxy', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(4);
    expect(bashBlocks(GUIDE)).toEqual(blocks);
    expect(blocks.join('\n')).toContain('npm start');
    expect(blocks.join('\n')).toContain('npm run start:worker');
    // The stop block is the last one: the test runs it on its own, after checking what the others started.
    expect(blocks.at(-1)).toMatch(/^kill /);
  });

  (HAS_REDIS ? it : it.skip)(
    'serves with two instances and a worker on one PostgreSQL and Redis, started as printed',
    async () => {
      const project = projectDirectory();
      const databaseUrl = (await createTestDatabase())!;
      const [port1, port2] = [await freeLoopbackPort(), await freeLoopbackPort()];
      const admin = { email: 'operator@example.com', password: randomBytes(12).toString('hex') };
      const env = {
        PATH,
        HOME: process.env.HOME,
        // npm stays offline.
        NPM_CONFIG_UPDATE_NOTIFIER: 'false',
        ...instanceDatabaseEnv(databaseUrl),
        REDIS_URL: process.env.REDIS_URL,
        // The run's Redis is shared by every test: this deployment's keys and channel apart.
        REDIS_KEY_PREFIX: `production-guide-${randomBytes(4).toString('hex')}:`,
        GATEHOUSE_PORT_1: String(port1),
        GATEHOUSE_PORT_2: String(port2),
        // The first administrator, as the guide says to add for a first start (the processes inherit it).
        BOOTSTRAP_ADMIN_EMAIL: admin.email,
        BOOTSTRAP_ADMIN_PASSWORD: admin.password,
        LOG_LEVEL: 'warn',
        BCRYPT_ROUNDS: '4',
      };
      const start = blocks.slice(0, -1);
      writeFileSync(join(project, 'start.sh'), `set -euo pipefail\n${start.join('\n')}\n`);
      writeFileSync(join(project, 'stop.sh'), `set -euo pipefail\n${blocks.at(-1)}\n`);
      const starter = runBash('start.sh', project, env);
      const logs = (): string =>
        ['api-1.log', 'api-2.log', 'worker.log']
          .filter((name) => existsSync(join(project, name)))
          .map((name) => `--- ${name}\n${readFileSync(join(project, name), 'utf8')}`)
          .join('\n');
      const pids = (): number[] =>
        ['api-1.pid', 'api-2.pid', 'worker.pid']
          .filter((name) => existsSync(join(project, name)))
          .map((name) => Number(readFileSync(join(project, name), 'utf8').trim()));
      try {
        // The start block returns once both instances answer /health/ready (its own polls).
        const started = await exited(starter, 240_000);
        if (started.code !== 0 || started.timedOut) {
          throw new Error(
            `the start blocks failed: exit ${started.code}${started.timedOut ? ' (timed out)' : ''}\n` +
              `${started.stdout}\n${started.stderr}\n${logs()}`,
          );
        }
        expect(pids()).toHaveLength(3);
        expect(readFileSync(join(project, '.env'), 'utf8')).toMatch(
          /^TOKEN_SIGNING_SECRET=[0-9a-f]{64}\nAPI_KEY_HASH_SECRET=[0-9a-f]{64}\nAUDIT_CHAIN_SECRET=[0-9a-f]{64}\n$/,
        );
        // The block that shows readiness printed both answers.
        const readyLine =
          /^\{"status":"ok","info":\{"database":\{"status":"up"\},"redis":\{"status":"up"\}\},/gm;
        expect(started.stdout.match(readyLine)).toHaveLength(2);

        const [one, two] = [`http://127.0.0.1:${port1}`, `http://127.0.0.1:${port2}`];
        for (const base of [one, two]) {
          const ready = await fetch(`${base}/health/ready`);
          expect({ base, status: ready.status }).toEqual({ base, status: 200 });
        }

        // A key made on the first instance verifies on the second.
        const signIn = await fetch(`${one}/v1/auth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(admin),
        });
        expect(signIn.status).toBe(200);
        const token = (await json(signIn)).access_token as string;
        const created = await fetch(`${one}/v1/api-keys`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'Production guide', role: 'developer', type: 'service' }),
        });
        expect(created.status).toBe(201);
        const key = await json(created);
        const verified = await fetch(`${two}/v1/auth/verify`, {
          headers: { authorization: `Bearer ${key.key}` },
        });
        expect(verified.status).toBe(200);
        expect(await json(verified)).toMatchObject({ valid: true, key_id: key.id });

        // A task made on the second instance runs on the worker (the instances run none) to succeeded.
        const queued = await fetch(`${two}/v1/tasks`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ instruction: 'from the production guide', agent_type: 'echo' }),
        });
        expect(queued.status).toBe(202);
        const taskId = (await json(queued)).id as string;
        let task: Record<string, unknown> = {};
        for (const deadline = Date.now() + 120_000; Date.now() < deadline;) {
          // Answers once the task is no longer queued or running, or after 30 s.
          const read = await fetch(`${one}/v1/tasks/${taskId}?wait=30`, {
            headers: { authorization: `Bearer ${key.key}` },
          });
          task = await json(read);
          if (task.status !== 'queued' && task.status !== 'running') break;
        }
        expect(task).toMatchObject({ status: 'succeeded', result: { output: 'from the production guide' } });

        // The guide's stop: SIGTERM through npm reaches each server, and each exits.
        const running = pids();
        const stopped = await exited(runBash('stop.sh', project, env), 30_000);
        expect({ code: stopped.code, stderr: stopped.stderr }).toEqual({ code: 0, stderr: '' });
        for (const deadline = Date.now() + 60_000; running.some(isRunning) && Date.now() < deadline;) {
          await sleep(100);
        }
        expect(running.filter(isRunning)).toEqual([]);
        for (const base of [one, two]) {
          const answered = await fetch(`${base}/health/live`).then(
            () => true,
            () => false,
          );
          expect({ base, answered }).toEqual({ base, answered: false });
        }
      } finally {
        // Whatever the guide's commands left running is in the start script's process group.
        try {
          process.kill(-starter.pid!, 'SIGKILL');
        } catch {
          // The group has ended.
        }
        rmSync(project, { recursive: true, force: true });
        await dropTestDatabase(databaseUrl);
      }
    },
  );
});
