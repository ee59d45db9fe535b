import { TasksModule } from '../../src/tasks/tasks.module';
import { ApiKeysModule } from '../../src/api-keys/api-keys.module';
import { DataSource } from 'typeorm';
import type { Principal } from '../../src/access/principal';
import { AuditRepository } from '../../src/audit/audit.repository';
import { AuditService } from '../../src/audit/audit.service';
import { EventsService } from '../../src/events/events.service';
import type { WebhookDelivery } from '../../src/webhooks/webhook-delivery.entity';
import { WebhookDeliveryWorker } from '../../src/webhooks/webhook-delivery.worker';
import type { Webhook } from '../../src/webhooks/webhook.entity';
import { WebhooksModule } from '../../src/webhooks/webhooks.module';
import { WebhooksRepository } from '../../src/webhooks/webhooks.repository';
import { WebhooksService } from '../../src/webhooks/webhooks.service';
import { ServiceContext, startFeatureContext } from '../support/feature-context';
import { PRIVATE_TARGETS, PUBLIC_URL } from '../support/outbound-targets';
import { userOfNewOrganization } from '../support/principals';

// Nothing is sent in this spec: public targets that reach nobody, and ones the default policy refuses.
const ELSEWHERE = 'http://[3fff::11]/other';
const origin = { ip: '203.0.113.9', userAgent: 'medium-spec' };

/**
 * WebhooksService and the fan-out of the delivery worker on a real database, with the default outbound
 * policy (private targets refused): endpoints scoped to their organization, every change audited with
 * it, deliveries and their retries. Sending, signatures and retries over HTTP are
 * test/webhooks.e2e-spec.ts's; concurrent delivery loops are webhook-delivery.medium-spec.ts's.
 */
describe('webhooks (service level)', () => {
  let context: ServiceContext;
  let webhooks: WebhooksService;
  let repository: WebhooksRepository;

  beforeAll(async () => {
    // With the modules that declare the event types these endpoints subscribe to (WebhookEventTypes).
    context = await startFeatureContext({ imports: [WebhooksModule, ApiKeysModule, TasksModule] });
    webhooks = context.get(WebhooksService);
    repository = context.get(WebhooksRepository);
  });
  afterAll(() => context?.close());

  const create = async (principal: Principal, events = ['key.created'], url = PUBLIC_URL): Promise<Webhook> =>
    (await webhooks.create(principal, { url, events }, origin)).webhook;
  /** The organization's audit entries in the order they were written (the chain's). */
  const auditOf = (principal: Principal) => context.get(AuditRepository).chainOf(principal.organizationId);
  const deliveriesOf = async (principal: Principal, webhook: Webhook): Promise<WebhookDelivery[]> =>
    (await webhooks.listDeliveries(principal, webhook.id, { limit: 100 })).data;
  /** Events as their producers write them: in a transaction of their own change. */
  const recordEvents = (organizationId: string, ...types: string[]): Promise<void> =>
    context.get(DataSource).transaction((manager) =>
      context.get(EventsService).record(
        manager,
        types.map((type) => ({ organizationId, type, data: { probe: type } })),
      ),
    );

  it('creates an endpoint with its events once each, sorted, and a secret only its sealed copy keeps', async () => {
    const a = userOfNewOrganization();
    const { webhook, secret } = await webhooks.create(
      a,
      { url: PUBLIC_URL, events: ['task.failed', 'key.created', 'task.failed'] },
      origin,
    );
    expect(webhook).toMatchObject({
      organizationId: a.organizationId,
      url: PUBLIC_URL,
      events: ['key.created', 'task.failed'],
      description: null,
      enabled: true,
      consecutiveFailures: 0,
    });
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/=]+$/);
    const stored = await webhooks.get(a, webhook.id);
    expect(stored.sealedSecret).not.toContain(secret.slice('whsec_'.length));
    expect(webhooks.secrets.open(stored.sealedSecret)).toBe(secret);
  });

  it('audits every change of an endpoint, by whom, from where, naming it', async () => {
    const a = userOfNewOrganization();
    const webhook = await create(a);
    await webhooks.update(a, webhook.id, { events: ['key.deleted'], description: 'moved' }, origin);
    const { secret } = await webhooks.rotateSecret(a, webhook.id, origin);
    expect(webhooks.secrets.open((await webhooks.get(a, webhook.id)).sealedSecret)).toBe(secret);
    await webhooks.delete(a, webhook.id, origin);

    const entries = await auditOf(a);
    expect(entries.map((entry) => [entry.action, entry.details])).toEqual([
      ['webhook.created', { webhook_id: webhook.id, url: PUBLIC_URL }],
      ['webhook.updated', { webhook_id: webhook.id, fields: ['description', 'events'] }],
      ['webhook.secret_rotated', { webhook_id: webhook.id }],
      ['webhook.deleted', { webhook_id: webhook.id }],
    ]);
    for (const entry of entries) {
      expect(entry).toMatchObject({
        actorType: 'user',
        actorId: a.userId,
        ip: origin.ip,
        userAgent: origin.userAgent,
      });
    }
    expect(await context.get(AuditService).verifyChain(a.organizationId)).toMatchObject({
      valid: true,
      entries: 4,
    });
  });

  it("hides an organization's endpoint and its deliveries from every other organization, which changes nothing", async () => {
    const a = userOfNewOrganization();
    const b = userOfNewOrganization();
    const webhook = await create(a);
    const delivery = await webhooks.ping(a, webhook.id);
    const before = await webhooks.get(a, webhook.id);

    const attempts: (() => Promise<unknown>)[] = [
      () => webhooks.get(b, webhook.id),
      () => webhooks.update(b, webhook.id, { enabled: false, url: ELSEWHERE }, origin),
      () => webhooks.rotateSecret(b, webhook.id, origin),
      () => webhooks.listDeliveries(b, webhook.id, {}),
      () => webhooks.ping(b, webhook.id),
      () => webhooks.retryDelivery(b, webhook.id, delivery.id),
      () => webhooks.delete(b, webhook.id, origin),
    ];
    for (const attempt of attempts) await expect(attempt()).rejects.toMatchObject({ code: 'not_found' });
    expect((await webhooks.list(b, {})).data).toEqual([]);
    expect(await auditOf(b)).toEqual([]);

    expect(await webhooks.get(a, webhook.id)).toEqual(before);
    expect((await deliveriesOf(a, webhook)).map((d) => d.id)).toEqual([delivery.id]);
    expect((await auditOf(a)).map((entry) => entry.action)).toEqual(['webhook.created']);
  });

  it('answers not_found for ids that are not endpoints or deliveries of it', async () => {
    const a = userOfNewOrganization();
    const webhook = await create(a);
    const other = await create(a);
    const delivery = await webhooks.ping(a, other.id);
    for (const id of ['whk_0000000000000000000000', 'nope', delivery.id]) {
      await expect(webhooks.get(a, id)).rejects.toMatchObject({ code: 'not_found' });
    }
    for (const deliveryId of [delivery.id, 'dlv_0000000000000000000000', webhook.id]) {
      await expect(webhooks.retryDelivery(a, webhook.id, deliveryId)).rejects.toMatchObject({
        code: 'not_found',
      });
    }
  });

  describe('targets (the default policy: private networks refused)', () => {
    it.each(PRIVATE_TARGETS)(
      'refuses an endpoint at %s (target_not_allowed on url) and stores nothing',
      async (_label, url) => {
        const a = userOfNewOrganization();
        await expect(webhooks.create(a, { url, events: ['key.created'] }, origin)).rejects.toMatchObject({
          code: 'target_not_allowed',
          errors: [expect.objectContaining({ field: 'url' })],
        });
        expect((await webhooks.list(a, {})).data).toEqual([]);
        expect(await auditOf(a)).toEqual([]);
      },
    );

    it('refuses to move an endpoint to a private target, and keeps it as it was', async () => {
      const a = userOfNewOrganization();
      const webhook = await create(a);
      await expect(
        webhooks.update(a, webhook.id, { url: 'http://localhost:8080/hook', description: 'moved' }, origin),
      ).rejects.toMatchObject({ code: 'target_not_allowed' });
      expect(await webhooks.get(a, webhook.id)).toMatchObject({ url: PUBLIC_URL, description: null });
      expect((await auditOf(a)).map((entry) => entry.action)).toEqual(['webhook.created']);
    });
  });

  it('re-enabling an endpoint the worker disabled clears its failures; turning it off keeps them', async () => {
    const a = userOfNewOrganization();
    const webhook = await create(a);
    // What the delivery worker does after consecutive failures.
    await repository.transaction(async (manager) => {
      for (let i = 0; i < 3; i++) await repository.countFailure(manager, webhook.id);
      await repository.disable(manager, webhook.id, '3 consecutive failed deliveries');
    });
    expect(await webhooks.get(a, webhook.id)).toMatchObject({
      enabled: false,
      consecutiveFailures: 3,
      disabledAt: expect.any(Date),
      disabledReason: '3 consecutive failed deliveries',
    });

    await webhooks.update(a, webhook.id, { enabled: false, description: 'still off' }, origin);
    expect(await webhooks.get(a, webhook.id)).toMatchObject({ enabled: false, consecutiveFailures: 3 });
    await webhooks.update(a, webhook.id, { enabled: true }, origin);
    expect(await webhooks.get(a, webhook.id)).toMatchObject({
      enabled: true,
      consecutiveFailures: 0,
      disabledAt: null,
      disabledReason: null,
    });
  });

  describe('deliveries', () => {
    it('pings one endpoint only: a pending delivery of a ping event that fan-out does not send again', async () => {
      const a = userOfNewOrganization();
      const pinged = await create(a, ['key.created']);
      const sibling = await create(a, ['key.created']);
      const delivery = await webhooks.ping(a, pinged.id);
      expect(delivery).toMatchObject({
        webhookId: pinged.id,
        eventType: 'ping',
        status: 'pending',
        attempts: 0,
      });

      await context.get(WebhookDeliveryWorker).fanOut();
      expect((await deliveriesOf(a, pinged)).map((d) => d.id)).toEqual([delivery.id]);
      expect(await deliveriesOf(a, sibling)).toEqual([]);
    });

    it('fans an event out to the enabled endpoints of its organization that subscribe to its type, once', async () => {
      const a = userOfNewOrganization();
      const b = userOfNewOrganization();
      const subscribed = await create(a, ['key.created', 'key.deleted']);
      const otherType = await create(a, ['task.failed']);
      const off = await create(a, ['key.created']);
      await webhooks.update(a, off.id, { enabled: false }, origin);
      const elsewhere = await create(b, ['key.created']);

      await recordEvents(a.organizationId, 'key.created', 'key.deleted');
      await recordEvents(b.organizationId, 'key.deleted');
      const worker = context.get(WebhookDeliveryWorker);
      while ((await worker.fanOut()) > 0) {
        /* until every event recorded so far is dispatched */
      }
      await worker.fanOut();

      const types = async (principal: Principal, webhook: Webhook) =>
        (await deliveriesOf(principal, webhook)).map((d) => d.eventType).sort();
      expect(await types(a, subscribed)).toEqual(['key.created', 'key.deleted']);
      expect(await types(a, otherType)).toEqual([]);
      expect(await types(a, off)).toEqual([]);
      expect(await types(b, elsewhere)).toEqual([]);
    });

    it('sends a delivery again on request once it was attempted, under the same event; not before', async () => {
      const a = userOfNewOrganization();
      const webhook = await create(a);
      const delivery = await webhooks.ping(a, webhook.id);
      await expect(webhooks.retryDelivery(a, webhook.id, delivery.id)).rejects.toMatchObject({
        code: 'delivery_pending',
      });

      // As the worker leaves a delivery that exhausted its retries.
      await repository.saveDelivery(
        Object.assign(delivery, {
          status: 'failed',
          attempts: 4,
          nextAttemptAt: null,
          lastResponseStatus: 503,
        }),
      );
      const retried = await webhooks.retryDelivery(a, webhook.id, delivery.id);
      expect(retried).toMatchObject({
        id: delivery.id,
        eventId: delivery.eventId,
        status: 'pending',
        attempts: 0,
        nextAttemptAt: expect.any(Date),
      });
      expect(retried.nextAttemptAt!.getTime()).toBeLessThanOrEqual(Date.now());
    });

    it('deletes an endpoint with its deliveries', async () => {
      const a = userOfNewOrganization();
      const webhook = await create(a);
      const delivery = await webhooks.ping(a, webhook.id);
      await webhooks.delete(a, webhook.id, origin);
      await expect(webhooks.get(a, webhook.id)).rejects.toMatchObject({ code: 'not_found' });
      expect(await repository.findDelivery(webhook.id, delivery.id)).toBeNull();
      expect((await webhooks.list(a, {})).data).toEqual([]);
    });
  });
});
