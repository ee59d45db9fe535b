import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { validateEnvironment } from '../src/config/environment';
import { checkCompose, COMPOSE_FILE, exampleValuesFor } from '../scripts/compose-check';

/**
 * The deployment files hold to what the code requires: compose.yaml follows the Compose Specification
 * (scripts/compose-check.ts, what CI runs as `npm run compose:check`), refuses to start without every
 * secret production refuses to start without, and gives each Gatehouse process a configuration the real
 * validation accepts; the Dockerfile builds with CI's own commands from every input the build reads.
 */

const ROOT = resolve(__dirname, '..');
const composeText = readFileSync(COMPOSE_FILE, 'utf8');

type Service = {
  image?: string;
  build?: unknown;
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  healthcheck?: { test?: string[]; disable?: boolean };
};

/** The secrets the real configuration refuses to start without in production, from its own messages. */
function secretsProductionRequires(): string[] {
  try {
    validateEnvironment({ NODE_ENV: 'production' });
  } catch (error) {
    return [...(error as Error).message.matchAll(/(\w+) must be set when NODE_ENV=production/g)].map(
      (m) => m[1],
    );
  }
  throw new Error('NODE_ENV=production started without any secret');
}

describe('compose.yaml', () => {
  const values = exampleValuesFor(composeText);
  const { model, schemaErrors } = checkCompose(composeText, values);
  const services = (model?.services ?? {}) as Record<string, Service>;
  const gatehouse = Object.entries(services).filter(([, service]) => service.build !== undefined);

  it('follows the Compose Specification once its variables are set', () => {
    expect(schemaErrors).toEqual([]);
    expect(Object.keys(services).sort()).toEqual(['api-1', 'api-2', 'postgres', 'proxy', 'redis', 'worker']);
  });

  it('is refused by the schema when it does not follow it (the check can fail)', () => {
    const broken = composeText.replace('stop_grace_period: 20s', 'stop_grace_periods: 20s');
    expect(checkCompose(broken, values).schemaErrors).toEqual([
      expect.stringContaining('"additionalProperty":"stop_grace_periods"'),
    ]);
  });

  it('refuses to start without each secret production requires, and the passwords and domain it sets', () => {
    const required = secretsProductionRequires();
    expect(required).toEqual(['TOKEN_SIGNING_SECRET', 'API_KEY_HASH_SECRET', 'AUDIT_CHAIN_SECRET']);
    const { missing } = checkCompose(composeText, {});
    expect([...missing.keys()].sort()).toEqual(
      [...required, 'POSTGRES_PASSWORD', 'REDIS_PASSWORD', 'GATEHOUSE_DOMAIN'].sort(),
    );
    // An empty value is refused as an unset one (`:?`, not `?`).
    const withEmpty = checkCompose(composeText, { ...values, API_KEY_HASH_SECRET: '' });
    expect([...withEmpty.missing.keys()]).toEqual(['API_KEY_HASH_SECRET']);
  });

  it('runs two API instances and a worker from one image, each with a configuration the service accepts', () => {
    expect(gatehouse.map(([name]) => name).sort()).toEqual(['api-1', 'api-2', 'worker']);
    for (const [name, service] of gatehouse) {
      expect({ name, image: service.image }).toEqual({ name, image: 'gatehouse:local' });
      const env = validateEnvironment(service.environment!);
      expect({ name, NODE_ENV: env.NODE_ENV, TRUST_PROXY: env.TRUST_PROXY }).toEqual({
        name,
        NODE_ENV: 'production',
        TRUST_PROXY: '1',
      });
      expect(env.DATABASE_URL).toMatch(/@postgres:5432\//);
      expect(env.REDIS_URL).toMatch(/@redis:6379$/);
      // Uploaded files live under DATA_DIR: every process sees the same ones.
      expect({ name, volumes: service.volumes }).toEqual({
        name,
        volumes: [`gatehouse-data:${env.DATA_DIR}`],
      });
    }
    const apis = gatehouse.filter(([name]) => name.startsWith('api-'));
    for (const [, service] of apis) expect(service.environment!.WORKER_CONCURRENCY).toBe('0');
  });

  it('starts the worker as `npm run start:worker` does, with no HTTP health check', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    // `exec`: npm's shell becomes node, so a SIGTERM to npm reaches the worker (docs/production.md).
    expect(`exec ${services.worker.command!.join(' ')}`).toBe(pkg.scripts['start:worker']);
    expect(services.worker.healthcheck).toEqual({ disable: true });
  });

  it('checks readiness at /health/ready, in the instances and in the proxy', () => {
    for (const name of ['api-1', 'api-2']) {
      expect(services[name].healthcheck!.test!.join(' ')).toContain("'http://127.0.0.1:3000/health/ready'");
    }
    const caddyfile = (model!.configs as Record<string, { content: string }>).caddyfile.content;
    expect(caddyfile).toContain('reverse_proxy api-1:3000 api-2:3000');
    expect(caddyfile).toContain('health_uri /health/ready');
    // `$$` is compose's literal `$`: Caddy reads the domain from its own environment.
    expect(caddyfile).toContain('{$GATEHOUSE_DOMAIN}');
  });
});

describe('the Dockerfile', () => {
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
  // The first stage (`FROM … AS build`): what the runtime stage copies dist/ and node_modules from.
  const buildStage = dockerfile.split(/^FROM /m)[1];
  const runs = [...buildStage.matchAll(/^RUN (.+)$/gm)].map((m) => m[1]);
  const copied = new Set(
    [...buildStage.matchAll(/^COPY (?!--from)(.+)$/gm)].flatMap((m) => m[1].trim().split(/\s+/).slice(0, -1)),
  );

  it('installs and builds with the commands CI runs', () => {
    const ci = readFileSync(join(ROOT, '.ci', 'run'), 'utf8');
    const install = /^(npm ci[^|&\n]*?)\s*\|\|/m.exec(ci)![1];
    expect(ci).toMatch(/\bnpm run build\b/);
    expect(runs.join(' && ')).toContain(install);
    expect(runs.join(' && ')).toMatch(/npm run build && npm prune --omit=dev/);
  });

  it('runs what `npm start` runs, node as PID 1 (exec form: SIGTERM reaches the server)', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    const command = JSON.parse(/^CMD (\[.*\])$/m.exec(dockerfile)![1]) as string[];
    expect(`exec ${command.join(' ')}`).toBe(pkg.scripts.start);
  });

  it("copies every input the build reads (the stale-build check's list, and what the dashboard imports)", () => {
    const staleCheck = readFileSync(join(ROOT, 'scripts', 'build-if-stale.js'), 'utf8');
    const inputs = /const INPUTS = \[([^\]]*)\]/
      .exec(staleCheck)![1]
      .match(/'[^']+'/g)!
      .map((s) => s.slice(1, -1));
    expect(inputs).toContain('src');
    // Folders outside dashboard/ its sources import (the generated API types, a client).
    const outside = new Set<string>();
    const walk = (path: string): void => {
      for (const name of readdirSync(path)) {
        const file = join(path, name);
        if (statSync(file).isDirectory()) walk(file);
        else if (/\.tsx?$/.test(name)) {
          for (const m of readFileSync(file, 'utf8').matchAll(/from '(\.[^']*)'/g)) {
            const target = relative(ROOT, resolve(dirname(file), m[1]));
            const top = target.split(sep)[0];
            if (top !== 'dashboard' && top !== 'node_modules') outside.add(top);
          }
        }
      }
    };
    walk(join(ROOT, 'dashboard'));
    if (existsSync(join(ROOT, 'clients'))) outside.add('clients');
    for (const input of [...inputs, ...outside])
      expect({ input, copied: copied.has(input) }).toEqual({ input, copied: true });
  });
});
