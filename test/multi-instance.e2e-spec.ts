import { randomBytes } from 'node:crypto';
import type { Response, Test } from 'supertest';
import type TestAgent from 'supertest/lib/agent';
import { DataSource } from 'typeorm';
import { KeyExpiryJob } from '../src/api-keys/key-expiry.job';
import { KeyRotationJob } from '../src/api-keys/key-rotation.job';
import { DomainEvent } from '../src/events/event.entity';
import { EventsService } from '../src/events/events.service';
import { bearer, createUser, signUpOrganization, SignedUpOrganization } from './support/factories';
import { Auth, createKey, pollUntil } from './support/keys';
import {
  describeWithPostgres,
  expectWithinOneSecond,
  HAS_SHARED_REDIS,
  PROPAGATION_BOUND_MS,
  sharedSecrets,
} from './support/instances';
import { startTestApp, TestApp } from './support/test-app';

/**
 * Two application instances, A and B, on one PostgreSQL database: revocations reach the other
 * instance's key cache within the contract's second (through Redis pub/sub when REDIS_URL is set,
 * PostgreSQL LISTEN/NOTIFY otherwise), rate limits are shared through Redis, and the scheduled jobs
 * (policy rotation, expiry warnings) act once however many instances run them.
 *
 * PGlite is an embedded, single-process database: two instances cannot share one, so without a
 * PostgreSQL server (DATABASE_URL) this suite is skipped.
 */

const itWithRedis = HAS_SHARED_REDIS ? it : it.skip;

const verify = (agent: TestAgent, auth: Auth): Test => agent.get('/v1/auth/verify').set(auth);

describeWithPostgres('multi-instance e2e')(
  'several instances on one database (needs PostgreSQL; PGlite is single-process)',
  () => {
    const env = sharedSecrets();
    let a: TestApp;
    let b: TestApp;
    let org: SignedUpOrganization;

    beforeAll(async () => {
      a = await startTestApp({ env });
      b = await startTestApp({ databaseUrl: a.databaseUrl, env });
      org = await signUpOrganization(a.http, 'Cluster');
    });
    afterAll(async () => {
      await b?.close();
      await a?.close();
    });

    it('shares one database: a key and a token made on A work on B', async () => {
      const key = await createKey(a.http, org.auth);
      const res = await verify(b.http, key.auth).expect(200);
      expect(res.body).toMatchObject({ valid: true, key_id: key.id });
      await b.http.get(`/v1/api-keys/${key.id}`).set(org.auth).expect(200);
    });

    describe('revocation reaches the other instance within a second', () => {
      /** A key B has just accepted (twice), so B's cache holds it. */
      async function keyCachedOnB(body: Record<string, unknown> = {}, auth: Auth = org.auth) {
        const key = await createKey(a.http, auth, body);
        await verify(b.http, key.auth).expect(200);
        await verify(b.http, key.auth).expect(200);
        return key;
      }

      it('delete on A: B refuses the key (401)', async () => {
        const key = await keyCachedOnB();
        await a.http.delete(`/v1/api-keys/${key.id}`).set(org.auth).expect(204);
        await expectWithinOneSecond(
          () => verify(b.http, key.auth),
          (res) => res.status === 401,
        );
        expect((await verify(a.http, key.auth)).status).toBe(401);
      });

      it('rotate without grace on A: B refuses the old value (401) and accepts the new one', async () => {
        const key = await keyCachedOnB();
        const rotated = await a.http.post(`/v1/api-keys/${key.id}/rotate`).set(org.auth).send({}).expect(200);
        await expectWithinOneSecond(
          () => verify(b.http, key.auth),
          (res) => res.status === 401,
        );
        const renewed = await verify(b.http, bearer(rotated.body.key)).expect(200);
        expect(renewed.body.key_id).toBe(key.id);
      });

      it('rotate with a grace period on A: B accepts the old value until the grace ends, then refuses it', async () => {
        const key = await keyCachedOnB();
        const rotated = await a.http
          .post(`/v1/api-keys/${key.id}/rotate`)
          .set(org.auth)
          .send({ grace_period_seconds: 3 })
          .expect(200);
        const graceEnds = Date.parse(rotated.body.previous_key_expires_at);
        // B serves both values while the grace period runs (its cache now knows the new state).
        await verify(b.http, bearer(rotated.body.key)).expect(200);
        const during = await verify(b.http, key.auth);
        if (Date.now() < graceEnds) expect(during.status).toBe(200);
        // Once it has ended, B refuses the old value: not before, and within a second after.
        const { value: refused } = await pollUntil(
          () => verify(b.http, key.auth),
          (res) => res.status === 401,
          { timeoutMs: graceEnds + PROPAGATION_BOUND_MS - Date.now(), intervalMs: 50 },
        );
        expect(refused.status).toBe(401);
        expect(Date.now()).toBeGreaterThanOrEqual(graceEnds);
        await verify(b.http, bearer(rotated.body.key)).expect(200);
      });

      it("owner deactivated on A: B refuses the owner's personal key (401)", async () => {
        const owner = await createUser(a.http, org, 'api_manager');
        const key = await keyCachedOnB({ role: 'viewer' }, owner.auth);
        await a.http.post(`/v1/users/${owner.id}/deactivate`).set(org.auth).expect(200);
        await expectWithinOneSecond(
          () => verify(b.http, key.auth),
          (res) => res.status === 401,
        );
        // The owner's access token is refused on B as well.
        expect((await b.http.get('/v1/api-keys').set(owner.auth)).status).toBe(401);
      });

      it("key role changed on A: B's verify shows the new role and permissions", async () => {
        const key = await keyCachedOnB({ role: 'developer' });
        expect((await verify(b.http, key.auth)).body.permissions).toContain('agents:delete');
        const patched = await a.http
          .patch(`/v1/api-keys/${key.id}`)
          .set(org.auth)
          .send({ role: 'viewer' })
          .expect(200);
        const res = await expectWithinOneSecond(
          () => verify(b.http, key.auth),
          (r) => r.status === 200 && r.body.role === 'viewer',
        );
        expect(res.body.permissions).toEqual(patched.body.permissions);
        expect(res.body.permissions).not.toContain('agents:delete');
        expect(res.body.permissions).toContain('agents:read');
      });

      it('custom role changed on A: B applies its new permissions to a key holding it', async () => {
        const roleName = `reader_${randomBytes(3).toString('hex')}`;
        await a.http
          .post('/v1/roles')
          .set(org.auth)
          .send({ role_name: roleName, permissions: { agents: ['read', 'execute'] } })
          .expect(201);
        const key = await keyCachedOnB({ role: roleName, type: 'service' });
        expect((await verify(b.http, key.auth)).body.permissions).toEqual(['agents:execute', 'agents:read']);
        await a.http
          .patch(`/v1/roles/${roleName}`)
          .set(org.auth)
          .send({ permissions: { agents: ['read'] } })
          .expect(200);
        const res = await expectWithinOneSecond(
          () => verify(b.http, key.auth),
          (r) => r.status === 200 && !r.body.permissions.includes('agents:execute'),
        );
        expect(res.body.permissions).toEqual(['agents:read']);
      });

      it("owner's role changed on A: B narrows the owner's personal key", async () => {
        // An api_manager's personal api_manager key; the owner then becomes a viewer.
        const owner = await createUser(a.http, org, 'api_manager');
        const key = await keyCachedOnB({ role: 'api_manager' }, owner.auth);
        expect((await verify(b.http, key.auth)).body.permissions).toContain('api_keys:create');
        await a.http.patch(`/v1/users/${owner.id}`).set(org.auth).send({ role: 'viewer' }).expect(200);
        const res = await expectWithinOneSecond(
          () => verify(b.http, key.auth),
          (r) => r.status === 200 && !r.body.permissions.includes('api_keys:create'),
        );
        expect(res.body.permissions).toContain('agents:read');
        expect(res.body.permissions.filter((p: string) => p.startsWith('api_keys:'))).toEqual([]);
      });

      it('allowed_ips changed on A: B refuses the key from its address (403 ip_not_allowed)', async () => {
        const key = await keyCachedOnB();
        await a.http
          .patch(`/v1/api-keys/${key.id}`)
          .set(org.auth)
          .send({ allowed_ips: ['203.0.113.7'] })
          .expect(200);
        const res = await expectWithinOneSecond(
          () => verify(b.http, key.auth),
          (r) => r.status === 403,
        );
        expect(res.body.code).toBe('ip_not_allowed');
      });
    });

    describe('rate limits shared through Redis (skipped without REDIS_URL: each instance then counts alone)', () => {
      itWithRedis(
        'accepts exactly requests_per_minute requests in total, alternating between A and B',
        async () => {
          const key = await createKey(a.http, org.auth, { rate_limit: { requests_per_minute: 6 } });
          const responses: Response[] = [];
          for (let i = 0; i < 14; i++) responses.push(await verify(i % 2 ? b.http : a.http, key.auth));
          const statuses = responses.map((res) => res.status);
          expect(statuses.filter((status) => status === 200)).toHaveLength(6);
          expect(statuses.filter((status) => status === 429)).toHaveLength(8);
          expect(statuses.slice(0, 6)).toEqual(Array(6).fill(200));
          // One counter: the remaining budget goes down across both instances.
          expect(responses.slice(0, 6).map((res) => res.headers['x-ratelimit-remaining'])).toEqual([
            '5',
            '4',
            '3',
            '2',
            '1',
            '0',
          ]);
          for (const refused of responses.slice(6)) expect(refused.body.code).toBe('rate_limited');
        },
      );
    });

    describe('scheduled jobs act once across instances', () => {
      it('a due rotation policy rotates the key once, with one sealed key.rotated event', async () => {
        const key = await createKey(a.http, org.auth, {
          type: 'service',
          rotation_policy: { enabled: true, days: 1 },
        });
        await verify(b.http, key.auth).expect(200);
        await a.app
          .get(DataSource)
          .query(`UPDATE api_keys SET next_rotation_at = now() - interval '1 minute' WHERE id = $1`, [
            key.id,
          ]);

        // Both instances scan at the same moment, twice over.
        const jobs = [a.app.get(KeyRotationJob), b.app.get(KeyRotationJob)];
        const rotated = [
          ...(await Promise.all(jobs.map((job) => job.runOnce()))),
          ...(await Promise.all(jobs.map((job) => job.runOnce()))),
        ];
        expect(rotated.reduce((sum, n) => sum + n, 0)).toBeLessThanOrEqual(1);

        const audit = await a.http
          .get('/v1/audit-log')
          .query({ action: 'key.rotated', key_id: key.id, limit: 100 })
          .set(org.auth)
          .expect(200);
        expect(audit.body.data).toHaveLength(1);
        expect(audit.body.data[0]).toMatchObject({
          action: 'key.rotated',
          key_id: key.id,
          actor: { type: 'system', id: null },
          details: expect.objectContaining({ automatic: true, grace_period_seconds: 0 }),
        });

        const events: { id: string; sealed_secret: string | null; data: Record<string, unknown> }[] =
          await a.app
            .get(DataSource)
            .query(
              `SELECT id, sealed_secret, data FROM events WHERE type = 'key.rotated' AND data->>'key_id' = $1`,
              [key.id],
            );
        expect(events).toHaveLength(1);
        const [event] = events;
        expect(event.sealed_secret).toEqual(expect.any(String));
        expect(event.sealed_secret).not.toContain(key.key);
        expect(JSON.stringify(event.data)).not.toContain(key.key);

        // The sealed value is the key's new value: it works on both instances; the old one no longer does.
        const newValue = a.app
          .get(EventsService)
          .openSecret({ sealedSecret: event.sealed_secret } as DomainEvent) as string;
        expect(newValue).toMatch(/^sk_/);
        expect(newValue).not.toBe(key.key);
        expect(event.sealed_secret).not.toContain(newValue);
        expect(JSON.stringify(event.data)).not.toContain(newValue);
        expect((await verify(b.http, bearer(newValue)).expect(200)).body.key_id).toBe(key.id);
        expect((await verify(a.http, bearer(newValue)).expect(200)).body.key_id).toBe(key.id);
        await expectWithinOneSecond(
          () => verify(b.http, key.auth),
          (res) => res.status === 401,
        );
        expect((await verify(a.http, key.auth)).status).toBe(401);

        const fetched = await a.http.get(`/v1/api-keys/${key.id}`).set(org.auth).expect(200);
        expect(Date.parse(fetched.body.last_rotated_at)).toBeGreaterThan(Date.parse(key.body.created_at));
        expect(Date.parse(fetched.body.rotation_policy.next_rotation_at)).toBeGreaterThan(Date.now());
      });

      it('a key expiring within EXPIRY_WARNING_DAYS gets exactly one key.expiring entry', async () => {
        const soon = await createKey(a.http, org.auth, {
          type: 'service',
          expiration: new Date(Date.now() + 2 * 86_400_000).toISOString(),
        });
        const later = await createKey(a.http, org.auth, {
          type: 'service',
          expiration: new Date(Date.now() + 10 * 86_400_000).toISOString(),
        });

        const jobs = [a.app.get(KeyExpiryJob), b.app.get(KeyExpiryJob)];
        await Promise.all(jobs.map((job) => job.runOnce()));
        await Promise.all(jobs.map((job) => job.runOnce()));

        const entries = async (keyId: string): Promise<Record<string, any>[]> =>
          (
            await b.http
              .get('/v1/audit-log')
              .query({ action: 'key.expiring', key_id: keyId, limit: 100 })
              .set(org.auth)
              .expect(200)
          ).body.data;
        const warned = await entries(soon.id);
        expect(warned).toHaveLength(1);
        expect(warned[0]).toMatchObject({
          action: 'key.expiring',
          key_id: soon.id,
          actor: { type: 'system', id: null },
          details: { expiration: soon.body.expiration },
        });
        // Ten days away is beyond the default seven: no warning yet.
        expect(await entries(later.id)).toEqual([]);

        const events: unknown[] = await a.app
          .get(DataSource)
          .query(`SELECT id FROM events WHERE type = 'key.expiring' AND data->>'key_id' = $1`, [soon.id]);
        expect(events).toHaveLength(1);
      });
    });
  },
);
