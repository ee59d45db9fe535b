import Ajv from 'ajv';
import { rmSync } from 'node:fs';
import { DataSource } from 'typeorm';
import { KeyExpiryJob } from '../src/api-keys/key-expiry.job';
import { KeyRotationJob } from '../src/api-keys/key-rotation.job';
import { WebhookDeliveryWorker } from '../src/webhooks/webhook-delivery.worker';
import { WEBHOOK_EVENTS } from '../src/webhooks/webhook-payloads';
import { waitFor as waitUntil } from './support/agent-server';
import {
  createUser,
  expectProblem,
  signUpOrganization,
  type SignedUpOrganization,
} from './support/factories';
import { dropTestDatabase, startTestApp, type TestApp } from './support/test-app';
import { verifyStandardWebhook, WebhookReceiver, type ReceivedWebhook } from './support/webhook-receiver';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { loadOpenApiMetadata } from './support/openapi-metadata';
import { CALLS_LOCAL_TARGETS } from './support/outbound-targets';

type Auth = { Authorization: string };

const SECRETS = {
  TOKEN_SIGNING_SECRET: 'webhooks-e2e-token-signing-secret-4f9a1c7e2b',
  API_KEY_HASH_SECRET: 'webhooks-e2e-api-key-hash-secret-8d3e6b0a5f',
};

/** An instance that delivers webhooks quickly to the local receiver and runs tasks. */
const DELIVERING = {
  ...CALLS_LOCAL_TARGETS,
  WEBHOOK_WORKERS: '1',
  WEBHOOK_RETRY_SCHEDULE_SECONDS: '1,1,1',
  WORKER_CONCURRENCY: '1',
  ...SECRETS,
};

const SECRET_SHAPE = /^whsec_[A-Za-z0-9+/=]+$/;
/** A key hash (HMAC-SHA256 in hex) or anything that looks like one. */
const HEX_64 = /[0-9a-f]{64}/i;
/** A key value: `sk_` + base62 (32 bytes) + checksum (not the tail of a `task_` id). */
const KEY_VALUE = /(?<![0-9A-Za-z_])sk_[0-9A-Za-z]{40,}/;

/** As the shared waitFor, with a longer default: deliveries retry on a schedule of whole seconds. */
const waitFor = <T>(
  probe: () => Promise<T> | T,
  done: (value: T) => boolean,
  timeoutMs = 20_000,
  intervalMs = 50,
): Promise<T> => waitUntil(probe, done, { timeoutMs, intervalMs });

let pathCounter = 0;
const newPath = (label: string): string => `/${label}-${++pathCounter}`;

/**
 * Webhooks over HTTP and the wire: endpoints, signed deliveries of every event, retries, disabling and
 * restarts. Organization scoping of endpoints, the refusal of private targets, fan-out and what each
 * change audits are test/medium/webhooks.medium-spec.ts's.
 */
describe('webhooks', () => {
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    receiver = await WebhookReceiver.start();
  });
  afterAll(() => receiver.close());

  /** Waits for a request on `path` whose parsed body satisfies `match`. */
  async function received(
    path: string,
    match: (body: any, request: ReceivedWebhook) => boolean,
    timeoutMs = 20_000,
  ): Promise<ReceivedWebhook> {
    const found = await waitFor(
      () => receiver.at(path).find((r) => r.json && match(r.json, r)),
      (r) => r !== undefined,
      timeoutMs,
    );
    if (!found) {
      throw new Error(
        `nothing matching arrived at ${path} within ${timeoutMs} ms; got: ${JSON.stringify(
          receiver.at(path).map((r) => r.json),
        )}`,
      );
    }
    return found;
  }

  /** Checks what every delivery must satisfy: Standard Webhooks headers and signature, envelope, no secrets. */
  function expectWellFormed(
    request: ReceivedWebhook,
    secret: string,
    options: { allowKeyValue?: string; forbidden?: string[] } = {},
  ): void {
    expect(request.headers['content-type']).toMatch(/^application\/json/);
    expect(request.headers['webhook-id']).toMatch(/^evt_[0-9A-Za-z]+$/);
    expect(request.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/=]+$/);
    const timestamp = Number(request.headers['webhook-timestamp']);
    expect(Number.isInteger(timestamp)).toBe(true);
    expect(Math.abs(request.receivedAt / 1000 - timestamp)).toBeLessThanOrEqual(5);
    expect(verifyStandardWebhook(secret, request)).toBe(true);
    // And as a receiver using the official Standard Webhooks library would check it.
    expect(
      new StandardWebhook(secret).verify(request.raw, {
        'webhook-id': request.headers['webhook-id'] as string,
        'webhook-timestamp': request.headers['webhook-timestamp'] as string,
        'webhook-signature': request.headers['webhook-signature'] as string,
      }),
    ).toEqual(request.json);

    expect(request.json).toEqual({
      type: expect.any(String),
      timestamp: expect.any(String),
      data: expect.any(Object),
    });
    expect(new Date(request.json.timestamp).toISOString()).toBe(request.json.timestamp);

    expect(request.raw).not.toMatch(HEX_64);
    const withoutAllowed = options.allowKeyValue
      ? request.raw.split(options.allowKeyValue).join('')
      : request.raw;
    expect(withoutAllowed).not.toMatch(KEY_VALUE);
    for (const value of options.forbidden ?? []) expect(request.raw).not.toContain(value);
  }

  describe('on an instance that delivers', () => {
    let t: TestApp;

    beforeAll(async () => {
      t = await startTestApp({ env: DELIVERING });
    });
    afterAll(() => t.close());

    async function createWebhook(
      auth: Auth,
      path: string,
      events: readonly string[] = WEBHOOK_EVENTS,
    ): Promise<{ id: string; secret: string; url: string }> {
      const url = receiver.url(path);
      const res = await t.http.post('/v1/webhooks').set(auth).send({ url, events }).expect(201);
      return { id: res.body.id, secret: res.body.secret, url };
    }

    async function createKey(
      auth: Auth,
      extra: Record<string, unknown> = {},
    ): Promise<{ id: string; key: string; body: any }> {
      const res = await t.http
        .post('/v1/api-keys')
        .set(auth)
        .send({ name: `key ${++pathCounter}`, role: 'api_manager', ...extra })
        .expect(201);
      return { id: res.body.id, key: res.body.key, body: res.body };
    }

    async function deliveries(auth: Auth, webhookId: string): Promise<any[]> {
      const res = await t.http
        .get(`/v1/webhooks/${webhookId}/deliveries`)
        .query({ limit: 100 })
        .set(auth)
        .expect(200);
      return res.body.data;
    }

    async function httpAgent(auth: Auth, path: string): Promise<string> {
      const res = await t.http
        .post('/v1/agents')
        .set(auth)
        .send({ name: `agent ${path}`, type: 'http', config: { url: receiver.url(path) } })
        .expect(201);
      return res.body.id;
    }

    describe('endpoints', () => {
      let org: SignedUpOrganization;

      beforeAll(async () => {
        org = await signUpOrganization(t.http, 'Hooks');
      });

      it('creates an endpoint and shows its signing secret only in the create answer', async () => {
        const url = receiver.url(newPath('crud'));
        const created = await t.http
          .post('/v1/webhooks')
          .set(org.auth)
          .send({ url, events: ['key.rotated', 'key.created'], description: 'Key changes' })
          .expect(201);
        expect(created.body).toEqual({
          id: expect.stringMatching(/^whk_[0-9A-Za-z]+$/),
          url,
          events: ['key.created', 'key.rotated'],
          description: 'Key changes',
          enabled: true,
          disabled_at: null,
          disabled_reason: null,
          created_at: expect.any(String),
          updated_at: expect.any(String),
          secret: expect.stringMatching(SECRET_SHAPE),
        });
        const { id, secret } = created.body;
        expect(Buffer.from(secret.slice('whsec_'.length), 'base64').length).toBeGreaterThanOrEqual(24);

        const got = await t.http.get(`/v1/webhooks/${id}`).set(org.auth).expect(200);
        expect(got.body).toEqual({ ...created.body, secret: undefined });
        expect(got.body).not.toHaveProperty('secret');
        expect(got.text).not.toContain(secret.slice('whsec_'.length));

        const list = await t.http.get('/v1/webhooks').set(org.auth).expect(200);
        expect(list.body.data.map((w: { id: string }) => w.id)).toContain(id);
        for (const webhook of list.body.data) expect(webhook).not.toHaveProperty('secret');
        expect(list.text).not.toContain(secret.slice('whsec_'.length));

        const patched = await t.http
          .patch(`/v1/webhooks/${id}`)
          .set(org.auth)
          .send({ description: 'Everything', events: ['task.failed', 'key.deleted', 'task.failed'] })
          .expect(200);
        expect(patched.body).toMatchObject({
          id,
          url,
          description: 'Everything',
          events: ['key.deleted', 'task.failed'],
        });
        expect(patched.body).not.toHaveProperty('secret');
        expect(patched.text).not.toContain(secret.slice('whsec_'.length));
        expect((await t.http.get(`/v1/webhooks/${id}`).set(org.auth).expect(200)).body.events).toEqual([
          'key.deleted',
          'task.failed',
        ]);
      });

      it.each([
        ['a url that is not one', { url: 'not a url', events: ['key.created'] }, 'url'],
        ['a non-http url', { url: 'ftp://127.0.0.1/hook', events: ['key.created'] }, 'url'],
        ['no url', { events: ['key.created'] }, 'url'],
        [
          'an unknown event',
          { url: 'http://127.0.0.1:9/hook', events: ['key.created', 'key.exploded'] },
          'events',
        ],
        ['empty events', { url: 'http://127.0.0.1:9/hook', events: [] }, 'events'],
        ['no events', { url: 'http://127.0.0.1:9/hook' }, 'events'],
        ['events that are not a list', { url: 'http://127.0.0.1:9/hook', events: 'key.created' }, 'events'],
        [
          'an unknown field',
          { url: 'http://127.0.0.1:9/hook', events: ['key.created'], secret: 'whsec_AAAA' },
          'secret',
        ],
      ])('refuses %s with 400', async (_label, body, field) => {
        const before = (await t.http.get('/v1/webhooks').set(org.auth).expect(200)).body.data.length;
        const res = await t.http.post('/v1/webhooks').set(org.auth).send(body);
        const problem = expectProblem(res, 400, 'validation_failed');
        expect(problem.errors?.map((e) => e.field)).toContain(field);
        expect((await t.http.get('/v1/webhooks').set(org.auth).expect(200)).body.data).toHaveLength(before);
      });

      it('refuses invalid changes with 400', async () => {
        const { id } = await createWebhook(org.auth, newPath('crud'), ['key.created']);
        expectProblem(
          await t.http.patch(`/v1/webhooks/${id}`).set(org.auth).send({ events: [] }),
          400,
          'validation_failed',
        );
        expectProblem(
          await t.http
            .patch(`/v1/webhooks/${id}`)
            .set(org.auth)
            .send({ events: ['key.nope'] }),
          400,
          'validation_failed',
        );
        expectProblem(
          await t.http.patch(`/v1/webhooks/${id}`).set(org.auth).send({ url: 'nope' }),
          400,
          'validation_failed',
        );
        expectProblem(
          await t.http.patch(`/v1/webhooks/${id}`).set(org.auth).send({ enabled: true, colour: 'red' }),
          400,
          'validation_failed',
        );
        const unchanged = await t.http.get(`/v1/webhooks/${id}`).set(org.auth).expect(200);
        expect(unchanged.body.events).toEqual(['key.created']);
      });

      it('needs the webhooks permissions: viewer and developer are refused, api_manager is not', async () => {
        const { id } = await createWebhook(org.auth, newPath('crud'), ['key.created']);
        const body = { url: receiver.url(newPath('crud')), events: ['key.created'] };
        for (const role of ['viewer', 'developer']) {
          const user = await createUser(t.http, org, role);
          expectProblem(await t.http.post('/v1/webhooks').set(user.auth).send(body), 403, 'forbidden');
          expectProblem(await t.http.get('/v1/webhooks').set(user.auth), 403, 'forbidden');
          expectProblem(await t.http.get(`/v1/webhooks/${id}`).set(user.auth), 403, 'forbidden');
          expectProblem(
            await t.http.patch(`/v1/webhooks/${id}`).set(user.auth).send({ description: 'x' }),
            403,
            'forbidden',
          );
          expectProblem(
            await t.http.post(`/v1/webhooks/${id}/rotate-secret`).set(user.auth),
            403,
            'forbidden',
          );
          expectProblem(await t.http.post(`/v1/webhooks/${id}/test`).set(user.auth), 403, 'forbidden');
          expectProblem(await t.http.delete(`/v1/webhooks/${id}`).set(user.auth), 403, 'forbidden');
        }
        await t.http.get(`/v1/webhooks/${id}`).set(org.auth).expect(200);

        const manager = await createUser(t.http, org, 'api_manager');
        const created = await t.http.post('/v1/webhooks').set(manager.auth).send(body).expect(201);
        expect(created.body.secret).toMatch(SECRET_SHAPE);
        await t.http.get('/v1/webhooks').set(manager.auth).expect(200);
        await t.http.delete(`/v1/webhooks/${created.body.id}`).set(manager.auth).expect(204);

        // An API key holding api_manager is enough too.
        const key = await createKey(org.auth);
        await t.http.post('/v1/webhooks').set({ 'X-API-Key': key.key }).send(body).expect(201);
      });

      it('deletes an endpoint (204, then 404) and sends it nothing more', async () => {
        const deletedPath = newPath('deleted');
        const disabledPath = newPath('paused');
        const sentinelPath = newPath('sentinel');
        const doomed = await createWebhook(org.auth, deletedPath, ['key.created']);
        const paused = await createWebhook(org.auth, disabledPath, ['key.created']);
        await createWebhook(org.auth, sentinelPath, ['key.created']);

        await t.http.delete(`/v1/webhooks/${doomed.id}`).set(org.auth).expect(204);
        expectProblem(await t.http.get(`/v1/webhooks/${doomed.id}`).set(org.auth), 404, 'not_found');
        expectProblem(await t.http.delete(`/v1/webhooks/${doomed.id}`).set(org.auth), 404, 'not_found');
        expectProblem(
          await t.http.get(`/v1/webhooks/${doomed.id}/deliveries`).set(org.auth),
          404,
          'not_found',
        );
        const list = await t.http.get('/v1/webhooks').set(org.auth).query({ limit: 100 }).expect(200);
        expect(list.body.data.map((w: { id: string }) => w.id)).not.toContain(doomed.id);

        const off = await t.http
          .patch(`/v1/webhooks/${paused.id}`)
          .set(org.auth)
          .send({ enabled: false })
          .expect(200);
        expect(off.body.enabled).toBe(false);

        // The same fan-out serves all three endpoints: once the sentinel has the event, the others would too.
        const key = await createKey(org.auth);
        await received(sentinelPath, (b) => b.type === 'key.created' && b.data.key_id === key.id);
        expect(receiver.at(deletedPath)).toEqual([]);
        expect(receiver.at(disabledPath)).toEqual([]);
      });

      it('rotates the signing secret: later deliveries verify only with the new one', async () => {
        const path = newPath('rotate-secret');
        const hook = await createWebhook(org.auth, path, ['key.created']);
        const first = await createKey(org.auth);
        const before = await received(path, (b) => b.data.key_id === first.id);
        expect(verifyStandardWebhook(hook.secret, before)).toBe(true);

        const rotated = await t.http.post(`/v1/webhooks/${hook.id}/rotate-secret`).set(org.auth).expect(200);
        expect(rotated.body).toMatchObject({ id: hook.id, url: hook.url, enabled: true });
        expect(rotated.body.secret).toMatch(SECRET_SHAPE);
        expect(rotated.body.secret).not.toBe(hook.secret);
        const got = await t.http.get(`/v1/webhooks/${hook.id}`).set(org.auth).expect(200);
        expect(got.body).not.toHaveProperty('secret');

        const second = await createKey(org.auth);
        const after = await received(path, (b) => b.data.key_id === second.id);
        expectWellFormed(after, rotated.body.secret);
        expect(verifyStandardWebhook(hook.secret, after)).toBe(false);
      });
    });

    describe('events', () => {
      let org: SignedUpOrganization;
      let path: string;
      let secret: string;
      /** Every key value issued in this block; none may appear in a delivery (but the policy rotation's). */
      const issued: string[] = [];

      beforeAll(async () => {
        org = await signUpOrganization(t.http, 'Events');
        path = newPath('events');
        ({ secret } = await createWebhook(org.auth, path));
      });

      const keyEvent = (type: string, keyId: string) => (b: any) =>
        b.type === type && b.data?.key_id === keyId;
      /** The delivery on this block's endpoint that `match` picks, checked well-formed (no issued key in it). */
      const event = async (match: (body: any) => boolean): Promise<ReceivedWebhook> => {
        const request = await received(path, match);
        expectWellFormed(request, secret, { forbidden: issued });
        return request;
      };

      it('sends key.created with the public fields of the key', async () => {
        const key = await createKey(org.auth, { name: 'created key', description: 'for the created event' });
        issued.push(key.key);
        const request = await event(keyEvent('key.created', key.id));
        expect(request.json.data).toMatchObject({
          key_id: key.id,
          name: 'created key',
          type: 'personal',
          role: 'api_manager',
          actor: { type: 'user', id: org.userId },
        });
        expect(request.json.data).not.toHaveProperty('key');
        expect(request.raw).not.toContain(key.body.start);
      });

      it('sends key.deleted', async () => {
        const key = await createKey(org.auth);
        issued.push(key.key);
        await t.http.delete(`/v1/api-keys/${key.id}`).set(org.auth).expect(204);
        const request = await event(keyEvent('key.deleted', key.id));
        expect(request.json.data).toMatchObject({ key_id: key.id, actor: { type: 'user', id: org.userId } });
      });

      it('sends key.disabled and key.enabled when the kill switch is turned', async () => {
        const key = await createKey(org.auth);
        issued.push(key.key);
        await t.http.patch(`/v1/api-keys/${key.id}`).set(org.auth).send({ enabled: false }).expect(200);
        const disabled = await event(keyEvent('key.disabled', key.id));
        expect(disabled.json.data).toMatchObject({
          key_id: key.id,
          enabled: false,
          actor: { type: 'user', id: org.userId },
        });
        await t.http.patch(`/v1/api-keys/${key.id}`).set(org.auth).send({ enabled: true }).expect(200);
        const enabled = await event(keyEvent('key.enabled', key.id));
        expect(enabled.json.data).toMatchObject({ key_id: key.id, enabled: true });
      });

      it('sends key.leaked, and key.revoked with reason leaked, when a key is reported found in public', async () => {
        const key = await createKey(org.auth);
        issued.push(key.key);
        await t.http
          .post('/v1/credentials/revoke')
          .send({ credentials: [key.key] })
          .expect(202);
        const leaked = await event(keyEvent('key.leaked', key.id));
        expect(leaked.json.data).toMatchObject({
          key_id: key.id,
          source: 'public_report',
          url: null,
          action_taken: 'revoked',
          actor: { type: 'system', id: null },
        });
        const revoked = await received(path, keyEvent('key.revoked', key.id));
        expect(revoked.json.data).toMatchObject({ key_id: key.id, reason: 'leaked' });
      });

      it('sends identity.created, identity.updated (with the changed fields) and identity.deleted', async () => {
        const created = await t.http
          .post('/v1/identities')
          .set(org.auth)
          .send({ external_id: 'cus_webhooks', meta: { plan: 'starter' } })
          .expect(201);
        const id: string = created.body.id;
        const identityEvent = (type: string) => (b: any) => b.type === type && b.data?.identity_id === id;
        const actor = { type: 'user', id: org.userId };

        const createdEvent = await event(identityEvent('identity.created'));
        expect(createdEvent.json.data).toEqual({ identity_id: id, external_id: 'cus_webhooks', actor });

        await t.http
          .patch(`/v1/identities/${id}`)
          .set(org.auth)
          .send({ external_id: 'cus_webhooks_2', meta: { plan: 'pro' } })
          .expect(200);
        const updated = await event(identityEvent('identity.updated'));
        expect(updated.json.data).toEqual({
          identity_id: id,
          external_id: 'cus_webhooks_2',
          actor,
          fields: ['external_id', 'meta'],
        });

        await t.http.delete(`/v1/identities/${id}`).set(org.auth).expect(204);
        const deleted = await event(identityEvent('identity.deleted'));
        expect(deleted.json.data).toEqual({ identity_id: id, external_id: 'cus_webhooks_2', actor });
      });

      it('sends key.credits_low once, when the balance falls below 10% of its amount', async () => {
        const key = await createKey(org.auth, { credits: { remaining: 10 } });
        issued.push(key.key);
        // 10% of 10 is 1: the tenth request leaves 0 and crosses it.
        for (let i = 0; i < 10; i++) {
          await t.http.get('/v1/auth/verify').set('Authorization', `Bearer ${key.key}`).expect(200);
        }
        const request = await event(keyEvent('key.credits_low', key.id));
        expect(request.json.data).toMatchObject({
          key_id: key.id,
          remaining: 0,
          amount: 10,
          actor: { type: 'system', id: null },
        });
        await t.http.get('/v1/auth/verify').set('Authorization', `Bearer ${key.key}`).expect(429);
        expect(receiver.at(path).filter((r) => keyEvent('key.credits_low', key.id)(r.json))).toHaveLength(1);
      });

      it("sends identity.credits_low once, when the identity's shared balance falls below 10% of its amount", async () => {
        const identity = await t.http
          .post('/v1/identities')
          .set(org.auth)
          .send({ external_id: 'cus_webhooks_low', credits: { remaining: 10 } })
          .expect(201);
        const id: string = identity.body.id;
        const keys = [
          await createKey(org.auth, { identity_id: id }),
          await createKey(org.auth, { identity_id: id }),
        ];
        issued.push(...keys.map((key) => key.key));
        // Two keys spend the one balance: the tenth request leaves 0 and crosses 10% of 10.
        for (let i = 0; i < 10; i++) {
          await t.http
            .get('/v1/auth/verify')
            .set('Authorization', `Bearer ${keys[i % 2].key}`)
            .expect(200);
        }
        const lowEvent = (b: any) => b.type === 'identity.credits_low' && b.data?.identity_id === id;
        const request = await event(lowEvent);
        expect(request.json.data).toEqual({
          identity_id: id,
          external_id: 'cus_webhooks_low',
          remaining: 0,
          amount: 10,
          actor: { type: 'system', id: null },
        });
        await t.http.get('/v1/auth/verify').set('Authorization', `Bearer ${keys[0].key}`).expect(429);
        expect(receiver.at(path).filter((r) => lowEvent(r.json))).toHaveLength(1);
      });

      it("sends key.revoked when a personal key's owner is deactivated", async () => {
        const owner = await createUser(t.http, org, 'api_manager');
        const key = await createKey(owner.auth, { name: 'personal key' });
        issued.push(key.key);
        await t.http.post(`/v1/users/${owner.id}/deactivate`).set(org.auth).expect(200);
        const request = await event(keyEvent('key.revoked', key.id));
        expect(request.json.data).toMatchObject({
          key_id: key.id,
          name: 'personal key',
          type: 'personal',
          reason: 'owner_deactivated',
          owner_id: owner.id,
        });
      });

      it('sends key.rotated on a manual rotation without the new key value', async () => {
        const key = await createKey(org.auth);
        issued.push(key.key);
        const rotated = await t.http
          .post(`/v1/api-keys/${key.id}/rotate`)
          .set(org.auth)
          .send({ grace_period_seconds: 60 })
          .expect(200);
        issued.push(rotated.body.key);
        const request = await event(keyEvent('key.rotated', key.id));
        expect(request.json.data).toMatchObject({
          key_id: key.id,
          automatic: false,
          grace_period_seconds: 60,
          actor: { type: 'user', id: org.userId },
        });
        expect(request.json.data).not.toHaveProperty('key');
        expect(request.raw).not.toContain(rotated.body.key);
      });

      it('sends key.rotated with the new, working key value when a rotation policy rotates it', async () => {
        const key = await createKey(org.auth, { rotation_policy: { enabled: true, days: 1 } });
        issued.push(key.key);
        expect(key.body.rotation_policy).toMatchObject({ enabled: true, days: 1 });
        await t.app
          .get(DataSource)
          .query(`UPDATE api_keys SET next_rotation_at = now() - interval '1 minute' WHERE id = $1`, [
            key.id,
          ]);

        const job = t.app.get(KeyRotationJob);
        const request = await waitFor(
          async () => {
            await job.runOnce();
            return receiver.at(path).find((r) => keyEvent('key.rotated', key.id)(r.json));
          },
          (r) => r !== undefined,
        );
        expect(request).toBeDefined();
        const newValue: string = request!.json.data.key;
        expect(newValue).toMatch(/^sk_[0-9A-Za-z]+$/);
        expect(newValue).not.toBe(key.key);
        expectWellFormed(request!, secret, { allowKeyValue: newValue, forbidden: issued });
        expect(request!.json.data).toMatchObject({
          key_id: key.id,
          automatic: true,
          actor: { type: 'system' },
        });

        const verified = await t.http
          .get('/v1/auth/verify')
          .set({ Authorization: `Bearer ${newValue}` })
          .expect(200);
        expect(verified.body).toMatchObject({ valid: true, key_id: key.id });
        // No grace period in the policy: the old value is refused at once.
        await t.http
          .get('/v1/auth/verify')
          .set({ Authorization: `Bearer ${key.key}` })
          .expect(401);
        const shown = await t.http.get(`/v1/api-keys/${key.id}`).set(org.auth).expect(200);
        expect(new Date(shown.body.rotation_policy.next_rotation_at).getTime()).toBeGreaterThan(Date.now());
        // The new value went to the webhook only: the key object never shows it.
        expect(shown.text).not.toContain(newValue);
      });

      it('sends key.expiring for a key created inside the warning window, then key.expired', async () => {
        const expiration = new Date(Date.now() + 3000).toISOString();
        const key = await createKey(org.auth, { expiration });
        issued.push(key.key);
        const job = t.app.get(KeyExpiryJob);
        const recorded = async (action: string): Promise<number> => {
          const res = await t.http.get(`/v1/api-keys/${key.id}/audit-log`).set(org.auth).expect(200);
          return res.body.data.filter((e: { action: string }) => e.action === action).length;
        };

        // The warning must be recorded while the key is still valid (a scan already running may predate it).
        const warned = await waitFor(
          async () => {
            await job.runOnce();
            return recorded('key.expiring');
          },
          (n) => n > 0,
          Date.parse(expiration) - Date.now() - 100,
          20,
        );
        expect(warned).toBe(1);
        const expiring = await event(keyEvent('key.expiring', key.id));
        expect(expiring.json.data).toMatchObject({ key_id: key.id, expiration, actor: { type: 'system' } });

        const expired = await waitFor(
          async () => {
            await job.runOnce();
            return receiver.at(path).find((r) => keyEvent('key.expired', key.id)(r.json));
          },
          (r) => r !== undefined,
          20_000,
          200,
        );
        expect(expired).toBeDefined();
        expect(expired!.receivedAt).toBeGreaterThanOrEqual(Date.parse(expiration));
        expectWellFormed(expired!, secret, { forbidden: issued });
        expect(expired!.json.data).toMatchObject({ key_id: key.id, expiration, actor: { type: 'system' } });
        expectProblem(
          await t.http.get('/v1/auth/verify').set({ Authorization: `Bearer ${key.key}` }),
          401,
          'key_expired',
        );

        // Each is recorded once, however many scans run.
        await job.runOnce();
        await job.runOnce();
        expect(await recorded('key.expiring')).toBe(1);
        expect(await recorded('key.expired')).toBe(1);
      });

      it('sends task.succeeded without the key value of the caller', async () => {
        const key = await createKey(org.auth, { role: 'developer', hide_credentials: false });
        issued.push(key.key);
        const task = await t.http
          .post('/v1/tasks')
          .set({ 'X-API-Key': key.key })
          .send({ instruction: 'say hello', agent_type: 'echo' })
          .expect(202);
        const request = await event((b) => b.type === 'task.succeeded' && b.data.task_id === task.body.id);
        expect(request.json.data).toMatchObject({ task_id: task.body.id, agent_type: 'echo' });
        const done = await t.http.get(`/v1/tasks/${task.body.id}`).set(org.auth).expect(200);
        expect(done.body.status).toBe('succeeded');
      });

      it('sends task.failed when an http agent refuses the task', async () => {
        const agentPath = newPath('agent-refuses');
        receiver.script(agentPath, () => ({ status: 400, json: { error: 'bad task' } }));
        const agentId = await httpAgent(org.auth, agentPath);
        const task = await t.http
          .post('/v1/tasks')
          .set(org.auth)
          .send({ instruction: 'fail please', agent_type: 'http', agent_id: agentId })
          .expect(202);
        const request = await event((b) => b.type === 'task.failed' && b.data.task_id === task.body.id);
        expect(request.json.data).toMatchObject({
          task_id: task.body.id,
          agent_type: 'http',
          error: { code: expect.any(String), message: expect.any(String) },
        });
        expect(receiver.at(agentPath).length).toBeGreaterThanOrEqual(1);
        const failed = await t.http.get(`/v1/tasks/${task.body.id}`).set(org.auth).expect(200);
        expect(failed.body.status).toBe('failed');
        expect(failed.body.error.code).toBe(request.json.data.error.code);
      });

      it('sends task.cancelled when a running task is cancelled', async () => {
        const agentPath = newPath('agent-holds');
        let release!: () => void;
        const held = new Promise<void>((resolve) => (release = resolve));
        receiver.script(agentPath, () => ({ status: 200, json: { late: true }, after: held }));
        try {
          const agentId = await httpAgent(org.auth, agentPath);
          const task = await t.http
            .post('/v1/tasks')
            .set(org.auth)
            .send({ instruction: 'take your time', agent_type: 'http', agent_id: agentId })
            .expect(202);
          await waitFor(
            () => receiver.at(agentPath).length,
            (n) => n > 0,
          );
          expect(receiver.at(agentPath)).toHaveLength(1);
          await t.http.post(`/v1/tasks/${task.body.id}/cancel`).set(org.auth).expect(200);
          const request = await event((b) => b.type === 'task.cancelled' && b.data.task_id === task.body.id);
          expect(request.json.data).toMatchObject({ task_id: task.body.id });
          release();
          const after = await t.http.get(`/v1/tasks/${task.body.id}`).set(org.auth).expect(200);
          expect(after.body.status).toBe('cancelled');
        } finally {
          release();
        }
      });

      it('lists each delivery of the endpoint as succeeded, with the webhook-id it was sent with', async () => {
        const list = await t.http.get('/v1/webhooks').set(org.auth).expect(200);
        const webhookId = list.body.data.find((w: { url: string }) => w.url === receiver.url(path)).id;
        const all = await waitFor(
          () => deliveries(org.auth, webhookId),
          (ds) => ds.every((d) => d.status === 'succeeded'),
        );
        const sent = receiver.at(path);
        expect(all.length).toBe(sent.length);
        expect(new Set(all.map((d) => d.event_id))).toEqual(
          new Set(sent.map((r) => r.headers['webhook-id'])),
        );
        for (const delivery of all) {
          expect(delivery).toMatchObject({
            id: expect.stringMatching(/^dlv_/),
            status: 'succeeded',
            attempts: 1,
            response_status: 200,
            next_attempt_at: null,
            delivered_at: expect.any(String),
          });
        }
        const types = new Set(sent.map((r) => r.json.type));
        expect([...types].sort()).toEqual([...WEBHOOK_EVENTS].sort());
      });
    });

    describe('retries', () => {
      let org: SignedUpOrganization;

      beforeAll(async () => {
        org = await signUpOrganization(t.http, 'Retries');
      });

      it('retries after failures with the same webhook-id and ends succeeded', async () => {
        const path = newPath('flaky');
        receiver.script(path, (_r, n) => (n <= 2 ? 500 : 200));
        const hook = await createWebhook(org.auth, path, ['key.created']);
        const key = await createKey(org.auth);

        const pending = await waitFor(
          () => deliveries(org.auth, hook.id),
          (ds) => ds.length === 1 && ds[0].status === 'pending' && ds[0].response_status === 500,
          20_000,
          25,
        );
        expect(pending).toHaveLength(1);
        expect(pending[0]).toMatchObject({
          event_type: 'key.created',
          status: 'pending',
          response_status: 500,
          last_error: expect.stringContaining('500'),
          next_attempt_at: expect.any(String),
          delivered_at: null,
        });
        expect(pending[0].attempts).toBeGreaterThanOrEqual(1);
        expect(Number.isNaN(Date.parse(pending[0].next_attempt_at))).toBe(false);

        const done = await waitFor(
          () => deliveries(org.auth, hook.id),
          (ds) => ds[0]?.status !== 'pending',
        );
        expect(done[0]).toMatchObject({
          id: pending[0].id,
          event_id: pending[0].event_id,
          status: 'succeeded',
          attempts: 3,
          response_status: 200,
          next_attempt_at: null,
          delivered_at: expect.any(String),
        });
        const attempts = receiver.at(path);
        expect(attempts.map((r) => r.answered)).toEqual([500, 500, 200]);
        for (const attempt of attempts) {
          expectWellFormed(attempt, hook.secret, { forbidden: [key.key] });
          expect(attempt.headers['webhook-id']).toBe(done[0].event_id);
          expect(attempt.raw).toBe(attempts[0].raw);
        }
      });

      it('fails a delivery that exhausts the schedule, and sends it again on request', async () => {
        const path = newPath('down');
        let up = false;
        receiver.script(path, () => (up ? 200 : 503));
        const hook = await createWebhook(org.auth, path, ['key.created']);
        const key = await createKey(org.auth);

        const failed = await waitFor(
          () => deliveries(org.auth, hook.id),
          (ds) => ds[0]?.status === 'failed',
          30_000,
        );
        // The first attempt plus one per entry of the schedule (1,1,1).
        expect(failed[0]).toMatchObject({
          status: 'failed',
          attempts: 4,
          response_status: 503,
          next_attempt_at: null,
          delivered_at: null,
        });
        expect(receiver.at(path)).toHaveLength(4);
        const webhook = await t.http.get(`/v1/webhooks/${hook.id}`).set(org.auth).expect(200);
        expect(webhook.body.enabled).toBe(true);

        expectProblem(
          await t.http
            .post(`/v1/webhooks/${hook.id}/deliveries/dlv_0000000000000000000000/retry`)
            .set(org.auth),
          404,
          'not_found',
        );
        up = true;
        const retried = await t.http
          .post(`/v1/webhooks/${hook.id}/deliveries/${failed[0].id}/retry`)
          .set(org.auth)
          .expect(202);
        expect(retried.body).toMatchObject({
          id: failed[0].id,
          event_id: failed[0].event_id,
          status: 'pending',
        });

        const done = await waitFor(
          () => deliveries(org.auth, hook.id),
          (ds) => ds[0]?.status === 'succeeded',
        );
        expect(done[0]).toMatchObject({
          status: 'succeeded',
          response_status: 200,
          delivered_at: expect.any(String),
        });
        const all = receiver.at(path);
        expect(all).toHaveLength(5);
        expect(all[4].answered).toBe(200);
        expect(new Set(all.map((r) => r.headers['webhook-id']))).toEqual(new Set([failed[0].event_id]));
        expectWellFormed(all[4], hook.secret, { forbidden: [key.key] });
        expect(all[4].json.data.key_id).toBe(key.id);
      });

      it('sends a ping on request', async () => {
        const path = newPath('ping');
        const hook = await createWebhook(org.auth, path, ['task.failed']);
        const res = await t.http.post(`/v1/webhooks/${hook.id}/test`).set(org.auth).expect(202);
        expect(res.body).toMatchObject({
          id: expect.stringMatching(/^dlv_/),
          event_id: expect.stringMatching(/^evt_/),
          event_type: 'ping',
          status: 'pending',
        });
        const ping = await received(path, (b) => b.type === 'ping');
        expectWellFormed(ping, hook.secret);
        expect(ping.headers['webhook-id']).toBe(res.body.event_id);
        expect(ping.json.data).toEqual({ webhook_id: hook.id });
        const done = await waitFor(
          () => deliveries(org.auth, hook.id),
          (ds) => ds[0]?.status === 'succeeded',
        );
        expect(done.map((d) => d.id)).toEqual([res.body.id]);
      });
    });

    it("never sends another organization's events to an endpoint", async () => {
      const a = await signUpOrganization(t.http, 'Alpha');
      const b = await signUpOrganization(t.http, 'Beta');
      const pathA = newPath('org-a');
      const pathB = newPath('org-b');
      const hookA = await createWebhook(a.auth, pathA);
      const hookB = await createWebhook(b.auth, pathB);

      // Both organizations busy at once, so their events share fan-out batches.
      const [keyA, keyB, taskB] = await Promise.all([
        createKey(a.auth),
        createKey(b.auth),
        t.http
          .post('/v1/tasks')
          .set(b.auth)
          .send({ instruction: 'beta work', agent_type: 'echo' })
          .expect(202),
      ]);
      await t.http.post(`/v1/api-keys/${keyB.id}/rotate`).set(b.auth).send({}).expect(200);
      await received(pathB, (body) => body.type === 'task.succeeded' && body.data.task_id === taskB.body.id);
      await received(pathB, (body) => body.type === 'key.rotated' && body.data.key_id === keyB.id);
      await received(pathB, (body) => body.type === 'key.created' && body.data.key_id === keyB.id);
      // Fan-out takes events oldest first: once A's later event has its delivery, B's were all dispatched.
      const lastA = await createKey(a.auth);
      await received(pathA, (body) => body.type === 'key.created' && body.data.key_id === lastA.id);
      await received(pathA, (body) => body.type === 'key.created' && body.data.key_id === keyA.id);

      const aDeliveries = await deliveries(a.auth, hookA.id);
      expect(aDeliveries.map((d) => d.event_type)).toEqual(['key.created', 'key.created']);
      for (const request of receiver.at(pathA)) {
        expect(request.raw).not.toContain(keyB.id);
        expect(request.raw).not.toContain(taskB.body.id);
        expect([keyA.id, lastA.id]).toContain(request.json.data.key_id);
        expect(verifyStandardWebhook(hookA.secret, request)).toBe(true);
      }
      expect(new Set(receiver.at(pathA).map((r) => r.headers['webhook-id']))).toEqual(
        new Set(aDeliveries.map((d) => d.event_id)),
      );
      const bDeliveries = await deliveries(b.auth, hookB.id);
      expect(bDeliveries.map((d) => d.event_type).sort()).toEqual([
        'key.created',
        'key.rotated',
        'task.succeeded',
      ]);
      for (const request of receiver.at(pathB)) expect(request.raw).not.toContain(keyA.id);
    });

    it('delivers each event exactly once to an endpoint that always answers 200', async () => {
      const org = await signUpOrganization(t.http, 'Once');
      const path = newPath('once');
      const hook = await createWebhook(org.auth, path);
      const keys = [];
      for (let i = 0; i < 4; i++) keys.push(await createKey(org.auth));
      await t.http.post(`/v1/api-keys/${keys[0].id}/rotate`).set(org.auth).send({}).expect(200);
      await t.http.delete(`/v1/api-keys/${keys[1].id}`).set(org.auth).expect(204);
      const task = await t.http
        .post('/v1/tasks')
        .set(org.auth)
        .send({ instruction: 'once', agent_type: 'echo' });
      expect(task.status).toBe(202);
      await t.http.post(`/v1/webhooks/${hook.id}/test`).set(org.auth).expect(202);
      // 4 created, 1 rotated, 1 deleted, 1 task.succeeded, 1 ping.
      const expected = 8;

      const settled = await waitFor(
        () => deliveries(org.auth, hook.id),
        (ds) => ds.length === expected && ds.every((d) => d.status === 'succeeded'),
        30_000,
      );
      expect(settled).toHaveLength(expected);
      expect(settled.every((d) => d.status === 'succeeded' && d.attempts === 1)).toBe(true);
      const ids = receiver.at(path).map((r) => r.headers['webhook-id']);
      expect(ids).toHaveLength(expected);
      expect(new Set(ids).size).toBe(expected);
      expect(new Set(ids)).toEqual(new Set(settled.map((d) => d.event_id)));
      expect(
        receiver
          .at(path)
          .map((r) => r.json.type)
          .sort(),
      ).toEqual(
        [
          'key.created',
          'key.created',
          'key.created',
          'key.created',
          'key.rotated',
          'key.deleted',
          'task.succeeded',
          'ping',
        ].sort(),
      );
    });

    it("matches the OpenAPI document's webhooks section with every event body it sent (whole suite)", async () => {
      await loadOpenApiMetadata(); // before the document is first built: the schemas' property types
      const document = (await t.http.get('/openapi.json').expect(200)).body;
      // The document's component schemas, addressable from each event's body schema.
      const ajv = new Ajv({ strict: false, validateFormats: false, allErrors: true });
      ajv.addSchema({ $id: 'openapi', components: document.components });
      // The core's events; an extension in the deployment's list adds its own.
      const documented = [...WEBHOOK_EVENTS].sort();
      expect(Object.keys(document.webhooks)).toEqual(expect.arrayContaining(documented));
      expect(document.components.schemas.WebhookEventType.enum).toEqual(expect.arrayContaining(documented));
      const validators = Object.fromEntries(
        documented.map((event) => {
          const schema = document.webhooks[event].post.requestBody.content['application/json'].schema;
          const rebased = JSON.parse(
            JSON.stringify(schema).replaceAll('"#/components/', '"openapi#/components/'),
          );
          return [event, ajv.compile(rebased)];
        }),
      );
      const bodies = receiver.received.map((r) => r.json).filter((body) => body?.type in validators);
      // Key and task events of every kind were sent by the tests above.
      expect(new Set(bodies.map((body) => body.type))).toEqual(new Set(documented));
      const mismatches = bodies.flatMap((body) => {
        const validate = validators[body.type];
        return validate(body) ? [] : [{ type: body.type, errors: ajv.errorsText(validate.errors) }];
      });
      expect(mismatches).toEqual([]);
      // And the schemas are not so loose that anything passes.
      expect(validators['task.failed']({ type: 'task.failed', timestamp: 'x', data: { task_id: 't' } })).toBe(
        false,
      );
    });

    it('sent each webhook-id once to every endpoint that never answered an error (whole suite)', async () => {
      const paths = new Set(receiver.received.filter((r) => r.headers['webhook-id']).map((r) => r.path));
      let checked = 0;
      for (const path of paths) {
        const requests = receiver.at(path);
        if (!requests.every((r) => r.answered !== undefined && r.answered < 300)) continue;
        const ids = requests.map((r) => r.headers['webhook-id']);
        expect({ path, duplicates: ids.filter((id, i) => ids.indexOf(id) !== i) }).toEqual({
          path,
          duplicates: [],
        });
        checked += 1;
      }
      expect(checked).toBeGreaterThanOrEqual(5);
    });
  });

  describe('endpoint disabling', () => {
    let t: TestApp;

    beforeAll(async () => {
      t = await startTestApp({
        env: {
          ...DELIVERING,
          WEBHOOK_DISABLE_AFTER_FAILURES: '3',
          WEBHOOK_RETRY_SCHEDULE_SECONDS: '1,1,1,1,1,1',
        },
      });
    });
    afterAll(() => t.close());

    it('disables an endpoint after consecutive failures, audits it, and re-enables it on request', async () => {
      const org = await signUpOrganization(t.http, 'Disabled');
      const path = newPath('failing');
      let healthy = false;
      receiver.script(path, () => (healthy ? 200 : 500));
      const created = await t.http
        .post('/v1/webhooks')
        .set(org.auth)
        .send({ url: receiver.url(path), events: ['key.created'] })
        .expect(201);
      const hookId: string = created.body.id;
      await t.http.post('/v1/api-keys').set(org.auth).send({ name: 'trigger', role: 'viewer' }).expect(201);

      const disabled = await waitFor(
        async () => (await t.http.get(`/v1/webhooks/${hookId}`).set(org.auth).expect(200)).body,
        (body) => body.enabled === false,
        30_000,
      );
      expect(disabled).toMatchObject({
        id: hookId,
        enabled: false,
        disabled_at: expect.any(String),
        disabled_reason: expect.stringContaining('3'),
      });
      expect(receiver.at(path)).toHaveLength(3);
      const list = await t.http.get(`/v1/webhooks/${hookId}/deliveries`).set(org.auth).expect(200);
      expect(list.body.data).toHaveLength(1);
      expect(list.body.data[0]).toMatchObject({ status: 'failed', attempts: 3, next_attempt_at: null });

      const audit = await t.http
        .get('/v1/audit-log')
        .query({ action: 'webhook.disabled' })
        .set(org.auth)
        .expect(200);
      expect(audit.body.data).toHaveLength(1);
      expect(audit.body.data[0]).toMatchObject({
        action: 'webhook.disabled',
        actor: { type: 'system' },
        details: { webhook_id: hookId },
      });

      // While disabled, new events are not sent to it.
      const sentinelPath = newPath('sentinel');
      await t.http
        .post('/v1/webhooks')
        .set(org.auth)
        .send({ url: receiver.url(sentinelPath), events: ['key.created'] })
        .expect(201);
      const quiet = await t.http
        .post('/v1/api-keys')
        .set(org.auth)
        .send({ name: 'quiet', role: 'viewer' })
        .expect(201);
      await received(sentinelPath, (b) => b.data.key_id === quiet.body.id);
      expect(receiver.at(path)).toHaveLength(3);

      healthy = true;
      const enabled = await t.http
        .patch(`/v1/webhooks/${hookId}`)
        .set(org.auth)
        .send({ enabled: true })
        .expect(200);
      expect(enabled.body).toMatchObject({ enabled: true, disabled_at: null, disabled_reason: null });
      const again = await t.http
        .post('/v1/api-keys')
        .set(org.auth)
        .send({ name: 'again', role: 'viewer' })
        .expect(201);
      const request = await received(path, (b) => b.data.key_id === again.body.id);
      expectWellFormed(request, created.body.secret, { forbidden: [again.body.key] });
      const after = await t.http.get(`/v1/webhooks/${hookId}`).set(org.auth).expect(200);
      expect(after.body.enabled).toBe(true);
    });
  });

  describe('restart', () => {
    it('loses no event when the instance stops between the change and its delivery', async () => {
      const path = newPath('restart');
      const otherPath = newPath('restart-other');
      const first = await startTestApp({
        env: { ...SECRETS, WEBHOOK_WORKERS: '0', ALLOW_PRIVATE_NETWORK_TARGETS: 'true' },
      });
      let second: TestApp | undefined;
      try {
        // Two organizations whose events are interleaved, so one fan-out batch holds both.
        const org = await signUpOrganization(first.http, 'Restart');
        const other = await signUpOrganization(first.http, 'Neighbour');
        const subscribe = async (auth: Auth, url: string): Promise<{ id: string; secret: string }> => {
          const res = await first.http
            .post('/v1/webhooks')
            .set(auth)
            .send({ url, events: WEBHOOK_EVENTS })
            .expect(201);
          return { id: res.body.id, secret: res.body.secret };
        };
        const hook = await subscribe(org.auth, receiver.url(path));
        const otherHook = await subscribe(other.auth, receiver.url(otherPath));
        const create = async (auth: Auth, name: string): Promise<{ id: string; key: string }> => {
          const res = await first.http
            .post('/v1/api-keys')
            .set(auth)
            .send({ name, role: 'viewer' })
            .expect(201);
          return { id: res.body.id, key: res.body.key };
        };
        const a = await create(org.auth, 'a');
        const x = await create(other.auth, 'x');
        const b = await create(org.auth, 'b');
        const rotated = await first.http
          .post(`/v1/api-keys/${a.id}/rotate`)
          .set(org.auth)
          .send({})
          .expect(200);
        // Half-way: these events are fanned out to deliveries that were never attempted...
        expect(await first.app.get(WebhookDeliveryWorker).fanOut()).toBe(4);
        // ...and these are still in the outbox.
        await first.http.delete(`/v1/api-keys/${b.id}`).set(org.auth).expect(204);
        const y = await create(other.auth, 'y');
        const c = await create(org.auth, 'c');

        const pending = await first.http.get(`/v1/webhooks/${hook.id}/deliveries`).set(org.auth).expect(200);
        expect(pending.body.data.map((d: any) => [d.event_type, d.status, d.attempts]).sort()).toEqual([
          ['key.created', 'pending', 0],
          ['key.created', 'pending', 0],
          ['key.rotated', 'pending', 0],
        ]);
        expect(receiver.at(path)).toEqual([]);
        await first.close({ keepData: true });

        second = await startTestApp({
          env: { ...DELIVERING },
          ...(first.databaseUrl
            ? { databaseUrl: first.databaseUrl }
            : { dataDir: first.dataDir, embedded: true }),
        });
        const expected = [
          ['key.created', a.id],
          ['key.created', b.id],
          ['key.rotated', a.id],
          ['key.deleted', b.id],
          ['key.created', c.id],
        ];
        const otherExpected = [
          ['key.created', x.id],
          ['key.created', y.id],
        ];
        await waitFor(
          () => [receiver.at(path).length, receiver.at(otherPath).length],
          ([mine, theirs]) => mine >= expected.length && theirs >= otherExpected.length,
          30_000,
        );
        const arrived = receiver.at(path);
        expect(arrived.map((r) => [r.json.type, r.json.data.key_id]).sort()).toEqual([...expected].sort());
        expect(
          receiver
            .at(otherPath)
            .map((r) => [r.json.type, r.json.data.key_id])
            .sort(),
        ).toEqual([...otherExpected].sort());
        // The same secrets (sealed under API_KEY_HASH_SECRET) still sign after the restart.
        for (const request of arrived) {
          expectWellFormed(request, hook.secret, { forbidden: [a.key, b.key, c.key, rotated.body.key] });
        }
        for (const request of receiver.at(otherPath)) expectWellFormed(request, otherHook.secret);
        expect(new Set(arrived.map((r) => r.headers['webhook-id'])).size).toBe(expected.length);

        // The access token of the first instance still works: same TOKEN_SIGNING_SECRET.
        const settled = await waitFor(
          async () =>
            (await second!.http.get(`/v1/webhooks/${hook.id}/deliveries`).set(org.auth).expect(200)).body
              .data,
          (ds: any[]) => ds.length === expected.length && ds.every((d) => d.status === 'succeeded'),
        );
        expect(settled).toHaveLength(expected.length);
        expect(settled.every((d: any) => d.status === 'succeeded' && d.attempts === 1)).toBe(true);
        expect(receiver.at(path)).toHaveLength(expected.length);
      } finally {
        if (second) await second.close();
        else await first.close({ keepData: true }).catch(() => undefined);
        if (first.databaseUrl) await dropTestDatabase(first.databaseUrl);
        else rmSync(first.dataDir, { recursive: true, force: true });
      }
    });
  });
});
