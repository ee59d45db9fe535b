/**
 * The settings every test instance starts from (test-instance.ts), and bench:leaks's in-process app:
 * quiet, fast password hashing, sign-up open, and no worker polling in the background (suites that
 * exercise tasks or webhook deliveries turn workers on).
 */
export const QUIET_INSTANCE_ENV = {
  NODE_ENV: 'test',
  LOG_LEVEL: 'silent',
  BCRYPT_ROUNDS: '4',
  ALLOW_SIGNUP: 'true',
  WORKER_CONCURRENCY: '0',
  WEBHOOK_WORKERS: '0',
} as const;
