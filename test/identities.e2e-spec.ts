import { DataSource } from 'typeorm';
import { expectProblem, SignedUpOrganization, signUpOrganization } from './support/factories';
import { Auth, createKey, CreatedKey } from './support/keys';
import { startTestApp, TestApp } from './support/test-app';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const IDENTITY_ID = /^idt_[0-9A-Za-z]{22}$/;

let counter = 0;
const externalId = (label = 'cus'): string => `${label}_${Date.now().toString(36)}_${++counter}`;

describe('identities', () => {
  let t: TestApp;
  let a: SignedUpOrganization;
  let b: SignedUpOrganization;

  beforeAll(async () => {
    t = await startTestApp();
    a = await signUpOrganization(t.http, 'Identities A');
    b = await signUpOrganization(t.http, 'Identities B');
  });
  afterAll(() => t.close());

  const createIdentity = async (auth: Auth, body: Record<string, unknown> = {}) => {
    const res = await t.http
      .post('/v1/identities')
      .set(auth)
      .send({ external_id: externalId(), ...body });
    expect(res.status).toBe(201);
    return res.body as Record<string, any>;
  };

  const count = async (organizationId: string): Promise<number> => {
    const [row] = await t.app
      .get(DataSource)
      .query(`SELECT count(*)::int AS n FROM identities WHERE organization_id = $1`, [organizationId]);
    return row.n;
  };

  describe('the resource', () => {
    it('creates an identity and answers the identity object', async () => {
      const external = externalId();
      const res = await t.http.post('/v1/identities').set(a.auth).send({ external_id: external });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        id: expect.stringMatching(IDENTITY_ID),
        external_id: external,
        meta: {},
        rate_limit: { requests_per_minute: null, requests_per_hour: null },
        credits: null,
        key_count: 0,
        created_at: expect.stringMatching(ISO),
        updated_at: expect.stringMatching(ISO),
      });
      const read = await t.http.get(`/v1/identities/${res.body.id}`).set(a.auth).expect(200);
      expect(read.body).toEqual(res.body);
    });

    it('stores meta, rate_limit and credits', async () => {
      const body = await createIdentity(a.auth, {
        meta: { plan: 'pro', seats: 3 },
        rate_limit: { requests_per_minute: 100 },
        credits: { remaining: 1000, refill: { interval: 'monthly', amount: 1000 } },
      });
      expect(body).toMatchObject({
        meta: { plan: 'pro', seats: 3 },
        rate_limit: { requests_per_minute: 100, requests_per_hour: null },
        credits: { remaining: 1000, refill: { interval: 'monthly', amount: 1000 }, refilled_at: null },
      });
      const read = await t.http.get(`/v1/identities/${body.id}`).set(a.auth).expect(200);
      expect(read.body).toEqual(body);
    });

    it.each([
      ['an empty external_id', { external_id: '' }, 'external_id'],
      ['an external_id over 255 characters', { external_id: 'x'.repeat(256) }, 'external_id'],
      ['no external_id', {}, 'external_id'],
      ['a number for external_id', { external_id: 42 }, 'external_id'],
      ['meta over 4 KiB', { external_id: 'm', meta: { blob: 'x'.repeat(4100) } }, 'meta'],
      ['meta that is an array', { external_id: 'm', meta: [1, 2] }, 'meta'],
      ['negative credits', { external_id: 'c', credits: { remaining: -1 } }, 'credits'],
      [
        'an unknown refill interval',
        { external_id: 'c', credits: { remaining: 5, refill: { interval: 'weekly', amount: 5 } } },
        'credits',
      ],
      [
        'a zero refill amount',
        { external_id: 'c', credits: { remaining: 5, refill: { interval: 'daily', amount: 0 } } },
        'credits',
      ],
      ['a zero rate limit', { external_id: 'r', rate_limit: { requests_per_minute: 0 } }, 'rate_limit'],
      ['a string rate limit', { external_id: 'r', rate_limit: { requests_per_hour: '10' } }, 'rate_limit'],
      ['an unknown field', { external_id: 'u', plan: 'pro' }, 'plan'],
    ])('refuses %s with 400 and writes nothing', async (_label, body, field) => {
      const before = await count(a.organizationId);
      const res = await t.http.post('/v1/identities').set(a.auth).send(body);
      const problem = expectProblem(res, 400);
      expect(problem.errors?.map((e) => e.field.split('.')[0])).toContain(field);
      expect(await count(a.organizationId)).toBe(before);
    });

    it('accepts meta of exactly 4 KiB as JSON text', async () => {
      const filler = 'x'.repeat(4096 - JSON.stringify({ blob: '' }).length);
      const body = await createIdentity(a.auth, { meta: { blob: filler } });
      expect(Buffer.byteLength(JSON.stringify(body.meta))).toBe(4096);
    });

    it('refuses a duplicate external_id with 409 identity_exists, also under a race', async () => {
      const external = externalId('dup');
      await createIdentity(a.auth, { external_id: external });
      expectProblem(
        await t.http.post('/v1/identities').set(a.auth).send({ external_id: external }),
        409,
        'identity_exists',
      );

      const raced = externalId('race');
      const answers = await Promise.all(
        Array.from({ length: 5 }, () =>
          t.http.post('/v1/identities').set(a.auth).send({ external_id: raced }),
        ),
      );
      expect(answers.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409]);
      for (const res of answers.filter((r) => r.status === 409)) expectProblem(res, 409, 'identity_exists');

      // Unique per organization only.
      await createIdentity(b.auth, { external_id: external });
    });

    it('lists newest first, filters by external_id and pages with next_cursor', async () => {
      const org = await signUpOrganization(t.http, 'Identities list');
      const made: string[] = [];
      for (let i = 0; i < 5; i++)
        made.push((await createIdentity(org.auth, { external_id: `list_${i}` })).id);

      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const res: { body: { data: { id: string }[]; next_cursor: string | null } } = await t.http
          .get('/v1/identities')
          .query(cursor ? { limit: 2, cursor } : { limit: 2 })
          .set(org.auth)
          .expect(200);
        expect(res.body.data.length).toBeLessThanOrEqual(2);
        seen.push(...res.body.data.map((identity: { id: string }) => identity.id));
        cursor = res.body.next_cursor;
      } while (cursor);
      expect(seen).toEqual([...made].reverse());

      const filtered = await t.http
        .get('/v1/identities')
        .query({ external_id: 'list_3' })
        .set(org.auth)
        .expect(200);
      expect(filtered.body).toEqual({
        data: [expect.objectContaining({ id: made[3], external_id: 'list_3' })],
        next_cursor: null,
      });
      const none = await t.http
        .get('/v1/identities')
        .query({ external_id: 'nobody' })
        .set(org.auth)
        .expect(200);
      expect(none.body).toEqual({ data: [], next_cursor: null });

      expectProblem(await t.http.get('/v1/identities').query({ limit: 0 }).set(org.auth), 400);
      expectProblem(
        await t.http.get('/v1/identities').query({ cursor: 'bogus' }).set(org.auth),
        400,
        'invalid_cursor',
      );
    });

    it('updates external_id, replaces meta whole, clears it with null, and sets rate_limit and credits', async () => {
      const identity = await createIdentity(a.auth, { meta: { plan: 'starter', region: 'eu' } });
      const renamed = externalId('renamed');
      const res = await t.http
        .patch(`/v1/identities/${identity.id}`)
        .set(a.auth)
        .send({
          external_id: renamed,
          meta: { plan: 'pro' },
          rate_limit: { requests_per_hour: 5000 },
          credits: { remaining: 50, refill: null },
        })
        .expect(200);
      expect(res.body).toMatchObject({
        id: identity.id,
        external_id: renamed,
        meta: { plan: 'pro' },
        rate_limit: { requests_per_minute: null, requests_per_hour: 5000 },
        credits: { remaining: 50, refill: null, refilled_at: null },
        created_at: identity.created_at,
      });

      const cleared = await t.http
        .patch(`/v1/identities/${identity.id}`)
        .set(a.auth)
        .send({ meta: null, rate_limit: null, credits: null })
        .expect(200);
      expect(cleared.body).toMatchObject({
        external_id: renamed,
        meta: {},
        rate_limit: { requests_per_minute: null, requests_per_hour: null },
        credits: null,
      });

      const other = await createIdentity(a.auth);
      expectProblem(
        await t.http
          .patch(`/v1/identities/${identity.id}`)
          .set(a.auth)
          .send({ external_id: other.external_id }),
        409,
        'identity_exists',
      );
      expectProblem(
        await t.http.patch(`/v1/identities/${identity.id}`).set(a.auth).send({ external_id: '' }),
        400,
      );
      expectProblem(
        await t.http.patch(`/v1/identities/${identity.id}`).set(a.auth).send({ external_id: null }),
        400,
      );
      const unchanged = await t.http.get(`/v1/identities/${identity.id}`).set(a.auth).expect(200);
      expect(unchanged.body.external_id).toBe(renamed);
    });

    it('answers 404 for another organization, for every route', async () => {
      const identity = await createIdentity(a.auth);
      expectProblem(await t.http.get(`/v1/identities/${identity.id}`).set(b.auth), 404, 'not_found');
      expectProblem(
        await t.http
          .patch(`/v1/identities/${identity.id}`)
          .set(b.auth)
          .send({ meta: { x: 1 } }),
        404,
        'not_found',
      );
      expectProblem(await t.http.delete(`/v1/identities/${identity.id}`).set(b.auth), 404, 'not_found');
      const listed = await t.http
        .get('/v1/identities')
        .query({ external_id: identity.external_id })
        .set(b.auth);
      expect(listed.body.data).toEqual([]);
      expectProblem(await t.http.get('/v1/identities/idt_nothing').set(a.auth), 404, 'not_found');
      expectProblem(
        await t.http.get('/v1/identities/key_0000000000000000000000').set(a.auth),
        404,
        'not_found',
      );
      // Unchanged for its own organization.
      const own = await t.http.get(`/v1/identities/${identity.id}`).set(a.auth).expect(200);
      expect(own.body.meta).toEqual({});
    });

    it('deletes an identity (204, then 404)', async () => {
      const identity = await createIdentity(a.auth);
      await t.http.delete(`/v1/identities/${identity.id}`).set(a.auth).expect(204);
      expectProblem(await t.http.get(`/v1/identities/${identity.id}`).set(a.auth), 404, 'not_found');
      expectProblem(await t.http.delete(`/v1/identities/${identity.id}`).set(a.auth), 404, 'not_found');
    });
  });

  describe('permissions', () => {
    it('a developer (or viewer) key is refused on every identities route; an api_manager key is allowed', async () => {
      const identity = await createIdentity(a.auth);
      for (const role of ['developer', 'viewer']) {
        const { auth } = await createKey(t.http, a.auth, { role, type: 'service' });
        expectProblem(
          await t.http.post('/v1/identities').set(auth).send({ external_id: externalId() }),
          403,
          'forbidden',
        );
        expectProblem(await t.http.get('/v1/identities').set(auth), 403, 'forbidden');
        expectProblem(await t.http.get(`/v1/identities/${identity.id}`).set(auth), 403, 'forbidden');
        expectProblem(
          await t.http
            .patch(`/v1/identities/${identity.id}`)
            .set(auth)
            .send({ meta: { x: 1 } }),
          403,
          'forbidden',
        );
        expectProblem(await t.http.delete(`/v1/identities/${identity.id}`).set(auth), 403, 'forbidden');
      }

      const manager = await createKey(t.http, a.auth, { role: 'api_manager', type: 'service' });
      const created = await t.http
        .post('/v1/identities')
        .set(manager.auth)
        .send({ external_id: externalId() })
        .expect(201);
      await t.http.get('/v1/identities').set(manager.auth).expect(200);
      await t.http.get(`/v1/identities/${created.body.id}`).set(manager.auth).expect(200);
      await t.http
        .patch(`/v1/identities/${created.body.id}`)
        .set(manager.auth)
        .send({ meta: { a: 1 } })
        .expect(200);
      await t.http.delete(`/v1/identities/${created.body.id}`).set(manager.auth).expect(204);

      const verify = await t.http.get('/v1/auth/verify').set(manager.auth).expect(200);
      expect(verify.body.permissions).toEqual(
        expect.arrayContaining([
          'identities:create',
          'identities:read',
          'identities:update',
          'identities:delete',
        ]),
      );
    });
  });

  describe('keys and their identity', () => {
    const summary = (identity: Record<string, any>) => ({
      id: identity.id,
      external_id: identity.external_id,
      meta: identity.meta,
    });

    it('a key names an identity on create; the key object, its list and key_count show it', async () => {
      const identity = await createIdentity(a.auth, { meta: { plan: 'pro' } });
      const key = await createKey(t.http, a.auth, { identity_id: identity.id });
      expect(key.body.identity).toEqual(summary(identity));

      const read = await t.http.get(`/v1/api-keys/${key.id}`).set(a.auth).expect(200);
      expect(read.body.identity).toEqual(summary(identity));
      const listed = await t.http.get('/v1/api-keys').query({ limit: 100 }).set(a.auth).expect(200);
      expect(listed.body.data.find((k: { id: string }) => k.id === key.id).identity).toEqual(
        summary(identity),
      );

      const plain = await createKey(t.http, a.auth);
      expect(plain.body.identity).toBeNull();

      await createKey(t.http, a.auth, { identity_id: identity.id });
      const withCount = await t.http.get(`/v1/identities/${identity.id}`).set(a.auth).expect(200);
      expect(withCount.body.key_count).toBe(2);
    });

    it('PATCH attaches and detaches (null) an identity', async () => {
      const identity = await createIdentity(a.auth);
      const key = await createKey(t.http, a.auth);
      const attached = await t.http
        .patch(`/v1/api-keys/${key.id}`)
        .set(a.auth)
        .send({ identity_id: identity.id })
        .expect(200);
      expect(attached.body.identity).toEqual(summary(identity));
      const detached = await t.http
        .patch(`/v1/api-keys/${key.id}`)
        .set(a.auth)
        .send({ identity_id: null })
        .expect(200);
      expect(detached.body.identity).toBeNull();
      const other = await t.http
        .patch(`/v1/api-keys/${key.id}`)
        .set(a.auth)
        .send({ name: 'renamed' })
        .expect(200);
      expect(other.body.identity).toBeNull();
    });

    it("lists an identity's keys with GET /v1/api-keys?identity_id=, and no other organization's", async () => {
      const identity = await createIdentity(a.auth);
      const attached = [
        await createKey(t.http, a.auth, { name: 'first of the identity', identity_id: identity.id }),
        await createKey(t.http, a.auth, { name: 'second of the identity', identity_id: identity.id }),
      ];
      await createKey(t.http, a.auth, { name: 'no identity' });
      const detached = await createKey(t.http, a.auth, { identity_id: identity.id });
      await t.http.patch(`/v1/api-keys/${detached.id}`).set(a.auth).send({ identity_id: null }).expect(200);
      const deleted = await createKey(t.http, a.auth, { identity_id: identity.id });
      await t.http.delete(`/v1/api-keys/${deleted.id}`).set(a.auth).expect(204);

      const listed = await t.http
        .get('/v1/api-keys')
        .query({ identity_id: identity.id })
        .set(a.auth)
        .expect(200);
      // Newest first, as every list.
      expect(listed.body.data.map((key: { id: string }) => key.id)).toEqual(
        attached.map((key) => key.id).reverse(),
      );
      expect(listed.body.data.every((key: any) => key.identity?.id === identity.id)).toBe(true);
      // Another organization's filter by this id finds nothing of organization A.
      const theirs = await t.http
        .get('/v1/api-keys')
        .query({ identity_id: identity.id })
        .set(b.auth)
        .expect(200);
      expect(theirs.body.data).toEqual([]);
      const tooLong = await t.http
        .get('/v1/api-keys')
        .query({ identity_id: 'x'.repeat(41) })
        .set(a.auth);
      expect(expectProblem(tooLong, 400, 'validation_failed').errors?.map((e) => e.field)).toEqual([
        'identity_id',
      ]);
    });

    it('refuses an identity that is not one of the organization with 400 unknown_identity', async () => {
      const theirs = await createIdentity(b.auth);
      const gone = await createIdentity(a.auth);
      await t.http.delete(`/v1/identities/${gone.id}`).set(a.auth).expect(204);
      const key = await createKey(t.http, a.auth);

      for (const identityId of [theirs.id, gone.id, 'idt_0000000000000000000000', 'not-an-id', '']) {
        const created = await t.http
          .post('/v1/api-keys')
          .set(a.auth)
          .send({ name: 'k', role: 'developer', identity_id: identityId });
        const problem = expectProblem(created, 400, 'unknown_identity');
        expect(problem.errors).toEqual([{ field: 'identity_id', message: expect.any(String) }]);
        expectProblem(
          await t.http.patch(`/v1/api-keys/${key.id}`).set(a.auth).send({ identity_id: identityId }),
          400,
          'unknown_identity',
        );
      }
      const unchanged = await t.http.get(`/v1/api-keys/${key.id}`).set(a.auth).expect(200);
      expect(unchanged.body.identity).toBeNull();
      const theirsRead = await t.http.get(`/v1/identities/${theirs.id}`).set(b.auth).expect(200);
      expect(theirsRead.body.key_count).toBe(0);
      expectProblem(
        await t.http.post('/v1/api-keys').set(a.auth).send({ name: 'k', role: 'developer', identity_id: 42 }),
        400,
      );
    });

    it('refuses to delete an identity keys still name (409 identity_in_use), not one only deleted keys named', async () => {
      const identity = await createIdentity(a.auth);
      const first = await createKey(t.http, a.auth, { identity_id: identity.id });
      const second = await createKey(t.http, a.auth, { identity_id: identity.id });

      expectProblem(await t.http.delete(`/v1/identities/${identity.id}`).set(a.auth), 409, 'identity_in_use');
      await t.http.patch(`/v1/api-keys/${first.id}`).set(a.auth).send({ identity_id: null }).expect(200);
      expectProblem(await t.http.delete(`/v1/identities/${identity.id}`).set(a.auth), 409, 'identity_in_use');
      await t.http.delete(`/v1/api-keys/${second.id}`).set(a.auth).expect(204);
      const read = await t.http.get(`/v1/identities/${identity.id}`).set(a.auth).expect(200);
      expect(read.body.key_count).toBe(0);
      await t.http.delete(`/v1/identities/${identity.id}`).set(a.auth).expect(204);
    });

    it('a key attaching while its identity is deleted either keeps it (409 identity_in_use) or is refused (400)', async () => {
      for (let round = 0; round < 8; round++) {
        const identity = await createIdentity(a.auth);
        const [created, deleted] = await Promise.all([
          t.http
            .post('/v1/api-keys')
            .set(a.auth)
            .send({ name: 'racer', role: 'viewer', identity_id: identity.id }),
          t.http.delete(`/v1/identities/${identity.id}`).set(a.auth),
        ]);
        if (created.status === 201) {
          expectProblem(deleted, 409, 'identity_in_use');
          expect(created.body.identity).toEqual(summary(identity));
          const read = await t.http.get(`/v1/api-keys/${created.body.id}`).set(a.auth).expect(200);
          expect(read.body.identity).toEqual(summary(identity));
        } else {
          expectProblem(created, 400, 'unknown_identity');
          expect(deleted.status).toBe(204);
        }
      }
    });

    it('verify shows the identity, and follows a change to it', async () => {
      const identity = await createIdentity(a.auth, { meta: { plan: 'starter' } });
      const key: CreatedKey = await createKey(t.http, a.auth, { identity_id: identity.id });
      const plain = await createKey(t.http, a.auth);

      const first = await t.http.get('/v1/auth/verify').set(key.auth).expect(200);
      expect(first.body).toMatchObject({ valid: true, key_id: key.id, identity: summary(identity) });
      const none = await t.http.get('/v1/auth/verify').set(plain.auth).expect(200);
      expect(none.body.identity).toBeNull();

      // The key's record is cached now: a change to the identity must still show at once.
      const renamed = externalId('verify');
      await t.http
        .patch(`/v1/identities/${identity.id}`)
        .set(a.auth)
        .send({ external_id: renamed, meta: { plan: 'pro' } })
        .expect(200);
      const after = await t.http.get('/v1/auth/verify').set(key.auth).expect(200);
      expect(after.body.identity).toEqual({ id: identity.id, external_id: renamed, meta: { plan: 'pro' } });

      await t.http.patch(`/v1/api-keys/${key.id}`).set(a.auth).send({ identity_id: null }).expect(200);
      const detached = await t.http.get('/v1/auth/verify').set(key.auth).expect(200);
      expect(detached.body.identity).toBeNull();
    });
  });

  describe('audit and events', () => {
    it('records identity.created, identity.updated and identity.deleted in the audit log and the outbox', async () => {
      const identity = await createIdentity(a.auth);
      await t.http
        .patch(`/v1/identities/${identity.id}`)
        .set(a.auth)
        .send({ meta: { a: 1 } })
        .expect(200);
      await t.http.delete(`/v1/identities/${identity.id}`).set(a.auth).expect(204);

      for (const action of ['identity.created', 'identity.updated', 'identity.deleted']) {
        const res = await t.http.get('/v1/audit-log').query({ action, limit: 100 }).set(a.auth).expect(200);
        const entry = res.body.data.find(
          (e: { details: Record<string, unknown> }) => e.details.identity_id === identity.id,
        );
        expect(entry).toMatchObject({
          action,
          actor: { type: 'user', id: a.userId },
          details: { identity_id: identity.id, external_id: identity.external_id },
        });
      }
      const updated = await t.http
        .get('/v1/audit-log')
        .query({ action: 'identity.updated', limit: 100 })
        .set(a.auth)
        .expect(200);
      expect(
        updated.body.data.find(
          (e: { details: Record<string, unknown> }) => e.details.identity_id === identity.id,
        ).details.fields,
      ).toEqual(['meta']);

      const events: { type: string; data: Record<string, unknown> }[] = await t.app
        .get(DataSource)
        .query(`SELECT type, data FROM events WHERE data->>'identity_id' = $1 ORDER BY created_at, type`, [
          identity.id,
        ]);
      expect(events.map((e) => e.type).sort()).toEqual([
        'identity.created',
        'identity.deleted',
        'identity.updated',
      ]);
      for (const event of events) {
        expect(event.data).toMatchObject({
          identity_id: identity.id,
          external_id: identity.external_id,
          actor: { type: 'user', id: a.userId },
        });
      }
      expect(events.find((e) => e.type === 'identity.updated')?.data.fields).toEqual(['meta']);

      // Another organization's log has none of it.
      const theirs = await t.http
        .get('/v1/audit-log')
        .query({ action: 'identity.created' })
        .set(b.auth)
        .expect(200);
      expect(
        theirs.body.data.some(
          (e: { details: Record<string, unknown> }) => e.details.identity_id === identity.id,
        ),
      ).toBe(false);
    });

    it('documents the identity events under the OpenAPI webhooks, and webhooks subscribe to them', async () => {
      const doc = await t.http.get('/openapi.json').expect(200);
      for (const event of ['identity.created', 'identity.updated', 'identity.deleted'])
        expect(Object.keys(doc.body.webhooks)).toContain(event);
      const hook = await t.http
        .post('/v1/webhooks')
        .set(a.auth)
        .send({
          url: 'https://[3fff::10]/hooks',
          events: ['identity.created', 'identity.updated', 'identity.deleted'],
        });
      expect(hook.status).toBe(201);
      expect([...hook.body.events].sort()).toEqual([
        'identity.created',
        'identity.deleted',
        'identity.updated',
      ]);
    });
  });
});
