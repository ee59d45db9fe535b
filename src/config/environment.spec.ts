import { ConfigurationError, validateEnvironment } from './environment';
import { databaseConfig, redisClusterNodes } from './namespaces';

function problemsOf(env: Record<string, string>): string[] {
  try {
    validateEnvironment(env);
  } catch (error) {
    if (error instanceof ConfigurationError) return error.problems;
    throw error;
  }
  return [];
}

describe('validateEnvironment', () => {
  it('applies defaults to an empty environment', () => {
    const env = validateEnvironment({});
    expect(env.PORT).toBe(3000);
    expect(env.ALLOW_SIGNUP).toBe(false);
    expect(env.DATABASE_URL).toBeUndefined();
  });

  it('converts numbers and booleans from strings', () => {
    const env = validateEnvironment({ PORT: '8080', ALLOW_SIGNUP: 'true', ALLOW_QUERY_API_KEY: 'false' });
    expect(env).toMatchObject({ PORT: 8080, ALLOW_SIGNUP: true, ALLOW_QUERY_API_KEY: false });
  });

  it.each([
    [{ PORT: 'eighty' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
    [{ REDIS_URL: 'http://x' }, 'REDIS_URL'],
    [{ ALLOW_SIGNUP: 'maybe' }, 'ALLOW_SIGNUP'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ RATE_LIMIT_WINDOW: 'rolling' }, 'RATE_LIMIT_WINDOW'],
    [{ TOKEN_SIGNING_SECRET: 'short' }, 'TOKEN_SIGNING_SECRET'],
    [{ BOOTSTRAP_ADMIN_EMAIL: 'admin@example.com' }, 'BOOTSTRAP_ADMIN_PASSWORD'],
  ])('names the variable when %j is invalid', (env, name) => {
    expect(problemsOf(env).join('\n')).toContain(name);
  });

  it('takes a Redis Cluster as its nodes, each a URL, instead of REDIS_URL and never beside it', () => {
    const env = validateEnvironment({
      REDIS_CLUSTER_NODES: 'redis://10.0.0.7:6379, 10.0.0.8:6380,rediss://cache:6379',
    });
    expect(redisClusterNodes(env.REDIS_CLUSTER_NODES)).toEqual([
      'redis://10.0.0.7:6379',
      'redis://10.0.0.8:6380',
      'rediss://cache:6379',
    ]);
    expect(
      redisClusterNodes(validateEnvironment({ REDIS_URL: 'redis://r:6379' }).REDIS_CLUSTER_NODES),
    ).toBeUndefined();
    expect(problemsOf({ REDIS_CLUSTER_NODES: 'redis://10.0.0.7' })).toEqual([
      'REDIS_CLUSTER_NODES must be a comma-separated list of redis://host:port (or host:port) nodes',
    ]);
    expect(problemsOf({ REDIS_URL: 'redis://r:6379', REDIS_CLUSTER_NODES: 'r:6379' })).toEqual([
      'set REDIS_URL (one Redis) or REDIS_CLUSTER_NODES (a Redis Cluster), not both',
    ]);
  });

  it('counts rate limits in sliding windows unless told fixed', () => {
    expect(validateEnvironment({}).RATE_LIMIT_WINDOW).toBe('sliding');
    expect(validateEnvironment({ RATE_LIMIT_WINDOW: 'fixed' }).RATE_LIMIT_WINDOW).toBe('fixed');
    expect(problemsOf({ RATE_LIMIT_WINDOW: 'Sliding' })).toEqual([
      'RATE_LIMIT_WINDOW must be one of the following values: sliding, fixed',
    ]);
  });

  it('says one thing per bad variable, the kind of value before its range', () => {
    expect(problemsOf({ PORT: 'abc' })).toEqual(['PORT must be an integer number']);
    expect(problemsOf({ PORT: '70000' })).toEqual(['PORT must not be greater than 65535']);
    const error = (() => {
      try {
        validateEnvironment({ PORT: 'abc', LOG_LEVEL: 'loud' });
      } catch (thrown) {
        return thrown as Error;
      }
    })();
    expect(error?.message.split('\n')).toEqual([
      'Invalid configuration: PORT must be an integer number',
      expect.stringMatching(/^Invalid configuration: LOG_LEVEL must be one of/),
    ]);
  });

  it('keeps hundreds of task runs in flight by default, within bounds, and the pool does not grow with them', async () => {
    expect(validateEnvironment({}).WORKER_CONCURRENCY).toBe(512);
    expect(validateEnvironment({ WORKER_CONCURRENCY: '0' }).WORKER_CONCURRENCY).toBe(0);
    expect(problemsOf({ WORKER_CONCURRENCY: '10001' })).toEqual([
      'WORKER_CONCURRENCY must not be greater than 10000',
    ]);
    expect(problemsOf({ WORKER_CONCURRENCY: '-1' })).toEqual(['WORKER_CONCURRENCY must not be less than 0']);
    const backgroundConnections = async (workers: string, connections?: string) =>
      (
        await databaseConfig.loadFrom({
          ...validateEnvironment({
            WORKER_CONCURRENCY: workers,
            ...(connections ? { WORKER_DATABASE_CONNECTIONS: connections } : {}),
          }),
          TOKEN_SIGNING_SECRET: 'x'.repeat(32),
          API_KEY_HASH_SECRET: 'y'.repeat(32),
          AUDIT_CHAIN_SECRET: 'z'.repeat(32),
          extensionVariables: {},
        })()
      ).backgroundConnections;
    // The worker's share (WORKER_DATABASE_CONNECTIONS, 8 by default) and the webhook loop's one.
    expect(await backgroundConnections('512')).toBe(8 + 1);
    expect(await backgroundConnections('10000')).toBe(8 + 1);
    expect(await backgroundConnections('512', '3')).toBe(3 + 1);
    expect(await backgroundConnections('2')).toBe(2 + 1);
    expect(await backgroundConnections('0')).toBe(1);
  });

  it('requires real secrets in production', () => {
    const problems = problemsOf({ NODE_ENV: 'production' }).join('\n');
    expect(problems).toContain('TOKEN_SIGNING_SECRET must be set');
    expect(problems).toContain('API_KEY_HASH_SECRET must be set');
    expect(problems).toContain('AUDIT_CHAIN_SECRET must be set');
  });

  it('refuses placeholder secrets in production but not in development', () => {
    const placeholder = 'change-me-to-32-or-more-random-characters';
    const production = problemsOf({
      NODE_ENV: 'production',
      TOKEN_SIGNING_SECRET: placeholder,
      API_KEY_HASH_SECRET: 'a'.repeat(40),
      AUDIT_CHAIN_SECRET: 'b'.repeat(40),
    });
    expect(production).toEqual(['TOKEN_SIGNING_SECRET looks like a placeholder; set a real secret']);
    expect(
      problemsOf({
        NODE_ENV: 'production',
        TOKEN_SIGNING_SECRET: 'a'.repeat(40),
        API_KEY_HASH_SECRET: 'b'.repeat(40),
        AUDIT_CHAIN_SECRET: placeholder,
      }),
    ).toEqual(['AUDIT_CHAIN_SECRET looks like a placeholder; set a real secret']);
    expect(problemsOf({ TOKEN_SIGNING_SECRET: placeholder })).toEqual([]);
  });

  it('treats empty strings as unset', () => {
    expect(validateEnvironment({ DATABASE_URL: '', REDIS_URL: ' ' }).DATABASE_URL).toBeUndefined();
  });
});
