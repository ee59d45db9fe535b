import { ApiKeysModule } from '../../src/api-keys/api-keys.module';
import type { Principal } from '../../src/access/principal';
import { WebhookDeliveryWorker } from '../../src/webhooks/webhook-delivery.worker';
import { WebhooksService } from '../../src/webhooks/webhooks.service';
import { DataSource } from 'typeorm';
import { HAS_POSTGRES, sharedSecrets } from '../support/instances';
import { administratorOf } from '../support/principals';
import { AccountsModule } from '../../src/accounts/accounts.module';
import { WebhooksModule } from '../../src/webhooks/webhooks.module';
import { ServiceContext, startFeatureContext } from '../support/feature-context';
import { WebhookReceiver } from '../support/webhook-receiver';

const ROUNDS = 6;
const DELIVERIES_PER_ROUND = 40;
const DISABLE_AFTER = 5;

/**
 * Two delivery loops (two worker instances on PostgreSQL; two loops of one on PGlite, which serves one
 * process) against an endpoint that always fails, while the failures disable it: the loops, recording
 * failures and disabling the endpoint concurrently, never deadlock (PostgreSQL 40P01), and every delivery
 * ends in one state. Issue 20: the two instances' loops deadlocked 10 times while an endpoint was disabled.
 */
describe('webhook delivery loops disabling a failing endpoint (service level)', () => {
  let receiver: WebhookReceiver;
  const contexts: ServiceContext[] = [];
  let principal: Principal;
  const origin = { ip: '127.0.0.1', userAgent: 'medium-spec' };

  beforeAll(async () => {
    receiver = await WebhookReceiver.start();
    const env = {
      ...sharedSecrets(),
      ALLOW_PRIVATE_NETWORK_TARGETS: 'true',
      WEBHOOK_DISABLE_AFTER_FAILURES: String(DISABLE_AFTER),
      // A failure before the endpoint is disabled waits for a retry far away: only the disable ends it.
      WEBHOOK_RETRY_SCHEDULE_SECONDS: '3600',
      // The loops are driven by the test (deliverDue), not in the background.
      WEBHOOK_WORKERS: '0',
    };
    const first = await startFeatureContext({
      imports: [WebhooksModule, AccountsModule, ApiKeysModule],
      env,
    });
    contexts.push(first);
    if (HAS_POSTGRES) {
      contexts.push(
        await startFeatureContext({
          imports: [WebhooksModule, AccountsModule, ApiKeysModule],
          env,
          databaseUrl: first.databaseUrl,
        }),
      );
    } else {
      console.warn('on PGlite (one process): two delivery loops of one instance instead of two instances');
    }
    principal = await administratorOf(first, 'Deliveries');
  });
  afterAll(async () => {
    // The second instance shares the first one's database, which the first drops: close it first.
    for (const context of [...contexts].reverse()) await context.close();
    await receiver?.close();
  });

  /** Both loops, as two instances run them, until neither finds a due delivery; every error they met. */
  const runLoopsUntilIdle = async (): Promise<unknown[]> => {
    const workers = [contexts[0], contexts[1] ?? contexts[0]].map((c) => c.get(WebhookDeliveryWorker));
    const errors: unknown[] = [];
    for (let pass = 0; pass < 20; pass++) {
      const results = await Promise.allSettled(workers.map((worker) => worker.deliverDue()));
      for (const result of results) {
        if (result.status === 'rejected') {
          const reason = result.reason as { errors?: unknown[] };
          errors.push(...(reason.errors ?? [reason]));
        }
      }
      if (results.every((result) => result.status === 'fulfilled' && result.value === 0)) break;
    }
    return errors;
  };

  it(`never deadlocks, and leaves every delivery failed and the endpoint disabled once (${ROUNDS} rounds)`, async () => {
    const database = contexts[0].get(DataSource);
    const webhooks = contexts[0].get(WebhooksService);
    for (let round = 0; round < ROUNDS; round++) {
      const url = receiver.script(`/failing-${round}`, () => 500);
      const { webhook } = await webhooks.create(principal, { url, events: ['key.created'] }, origin);
      for (let i = 0; i < DELIVERIES_PER_ROUND; i++) await webhooks.ping(principal, webhook.id);

      const met = (await runLoopsUntilIdle()).map((error) => {
        const { code, message } = error as { code?: string; message?: string };
        return `${code ?? '-'} ${message}`;
      });
      expect(met.filter((line) => line.startsWith('40P01'))).toEqual([]);
      expect(met).toEqual([]);

      const states = await database.query<{ status: string; n: number }[]>(
        `SELECT status, count(*)::int AS n FROM webhook_deliveries WHERE webhook_id = $1 GROUP BY status`,
        [webhook.id],
      );
      expect(states).toEqual([{ status: 'failed', n: DELIVERIES_PER_ROUND }]);
      const [endpoint] = await database.query<{ enabled: boolean; disabled_reason: string | null }[]>(
        `SELECT enabled, disabled_reason FROM webhooks WHERE id = $1`,
        [webhook.id],
      );
      expect(endpoint).toEqual({
        enabled: false,
        disabled_reason: `${DISABLE_AFTER} consecutive failed deliveries`,
      });
      const [{ n: disabledEntries }] = await database.query<{ n: number }[]>(
        `SELECT count(*)::int AS n FROM audit_entries
          WHERE action = 'webhook.disabled' AND details->>'webhook_id' = $1`,
        [webhook.id],
      );
      expect(disabledEntries).toBe(1);
    }
  });
});
