import type TestAgent from 'supertest/lib/agent';
import { expectProblem, signUpOrganization, SignedUpOrganization } from './support/factories';
import { Auth, createKey } from './support/keys';
import {
  describeWithPostgres,
  expectWithinOneSecond,
  HAS_SHARED_REDIS,
  sharedSecrets,
} from './support/instances';
import { dropTestDatabase, startTestApp, TestApp } from './support/test-app';

/**
 * The kill switch and credits across two instances, A and B, on one PostgreSQL database (and one Redis
 * when REDIS_URL is set: credits are then spent in Redis, else in the database): disabling and
 * top-ups reach the other instance within a second, a balance of N accepts exactly N requests however
 * they are spread, and the balance survives a restart of an instance. Needs PostgreSQL: PGlite is a
 * single-process database.
 */

const verify = (http: TestAgent, auth: Auth) => http.get('/v1/auth/verify').set(auth);

describeWithPostgres('key-controls multi-instance e2e')(
  'key controls on two instances (needs PostgreSQL)',
  () => {
    const env = sharedSecrets();
    let a: TestApp;
    let b: TestApp;
    let org: SignedUpOrganization;
    let databaseUrl: string | undefined;

    beforeAll(async () => {
      a = await startTestApp({ env });
      databaseUrl = a.databaseUrl;
      b = await startTestApp({ databaseUrl, env });
      org = await signUpOrganization(a.http, 'Two');
    });
    afterAll(async () => {
      await b?.close();
      await a?.close();
      // The restart test keeps the first instance's database for the next one; nobody owns it after.
      if (databaseUrl) await dropTestDatabase(databaseUrl);
    });

    it('a key disabled on A is refused on B within a second, and enabled again likewise', async () => {
      const key = await createKey(a.http, org.auth, { role: 'viewer' });
      await verify(b.http, key.auth).expect(200);

      await a.http.patch(`/v1/api-keys/${key.id}`).set(org.auth).send({ enabled: false }).expect(200);
      expectProblem(
        await expectWithinOneSecond(
          () => verify(b.http, key.auth),
          (res) => res.status === 401,
        ),
        401,
        'key_disabled',
      );
      await a.http.patch(`/v1/api-keys/${key.id}`).set(org.auth).send({ enabled: true }).expect(200);
      await expectWithinOneSecond(
        () => verify(b.http, key.auth),
        (res) => res.status === 200,
      );
    });

    it("an identity changed on A shows in B's verify of its keys within a second", async () => {
      const identity = await a.http
        .post('/v1/identities')
        .set(org.auth)
        .send({ external_id: 'cus_two_instances', meta: { plan: 'starter' } })
        .expect(201);
      const key = await createKey(a.http, org.auth, { role: 'viewer', identity_id: identity.body.id });
      // B caches the key's record, identity included.
      expect((await verify(b.http, key.auth).expect(200)).body.identity).toEqual({
        id: identity.body.id,
        external_id: 'cus_two_instances',
        meta: { plan: 'starter' },
      });

      await a.http
        .patch(`/v1/identities/${identity.body.id}`)
        .set(org.auth)
        .send({ external_id: 'cus_two_instances_2', meta: { plan: 'pro' } })
        .expect(200);
      const seen = await expectWithinOneSecond(
        () => verify(b.http, key.auth),
        (res) => res.body?.identity?.external_id === 'cus_two_instances_2',
      );
      expect(seen.body.identity).toEqual({
        id: identity.body.id,
        external_id: 'cus_two_instances_2',
        meta: { plan: 'pro' },
      });
    });

    it('a balance of N accepts exactly N requests spread over both instances at once', async () => {
      const N = 25;
      const key = await createKey(a.http, org.auth, {
        role: 'viewer',
        credits: { remaining: N },
        rate_limit: { requests_per_minute: 10_000 },
      });
      const responses = await Promise.all(
        Array.from({ length: 80 }, (_, i) => verify(i % 2 ? b.http : a.http, key.auth)),
      );
      const accepted = responses.filter((res) => res.status === 200);
      expect(accepted).toHaveLength(N);
      for (const res of responses.filter((r) => r.status !== 200))
        expectProblem(res, 429, 'credits_exhausted');
      // Each accepted request saw its own balance: N-1 … 0, every one once.
      expect(accepted.map((res) => res.body.credits_remaining).sort((x, y) => x - y)).toEqual(
        Array.from({ length: N }, (_, i) => i),
      );
      for (const http of [a.http, b.http]) {
        expect(
          (await http.get(`/v1/api-keys/${key.id}`).set(org.auth).expect(200)).body.credits.remaining,
        ).toBe(0);
      }
    });

    /** An identity (created on A) with `controls`, and three keys of it whose own limits no test reaches. */
    async function identityWithThreeKeys(controls: Record<string, unknown>) {
      const identity = await a.http
        .post('/v1/identities')
        .set(org.auth)
        .send({ external_id: `cus_two_${Date.now()}_${Math.random()}`, ...controls })
        .expect(201);
      const keys = await Promise.all(
        [0, 1, 2].map(() =>
          createKey(a.http, org.auth, {
            role: 'viewer',
            identity_id: identity.body.id,
            rate_limit: { requests_per_minute: 10_000 },
          }),
        ),
      );
      return { identity: identity.body as { id: string }, keys };
    }

    it("an identity's balance of N accepts exactly N requests of its keys spread over both instances", async () => {
      const N = 20;
      const { identity, keys } = await identityWithThreeKeys({ credits: { remaining: N } });
      const responses = await Promise.all(
        Array.from({ length: 60 }, (_, i) => verify(i % 2 ? b.http : a.http, keys[i % 3].auth)),
      );
      const accepted = responses.filter((res) => res.status === 200);
      expect(accepted).toHaveLength(N);
      for (const res of responses.filter((r) => r.status !== 200))
        expect(expectProblem(res, 429, 'credits_exhausted')).toMatchObject({ scope: 'identity' });
      expect(accepted.map((res) => res.body.credits_remaining).sort((x, y) => x - y)).toEqual(
        Array.from({ length: N }, (_, i) => i),
      );
      for (const http of [a.http, b.http]) {
        const read = await http.get(`/v1/identities/${identity.id}`).set(org.auth).expect(200);
        expect(read.body.credits.remaining).toBe(0);
      }
    });

    // Rate-limit windows are shared through Redis; without it each instance counts its own.
    (HAS_SHARED_REDIS ? it : it.skip)(
      "an identity's shared limit of N accepts exactly N requests of its keys over both instances",
      async () => {
        const N = 12;
        const { keys } = await identityWithThreeKeys({ rate_limit: { requests_per_minute: N } });
        const responses = await Promise.all(
          Array.from({ length: 40 }, (_, i) => verify(i % 2 ? b.http : a.http, keys[i % 3].auth)),
        );
        expect(responses.filter((res) => res.status === 200)).toHaveLength(N);
        for (const res of responses.filter((r) => r.status !== 200))
          expect(expectProblem(res, 429, 'rate_limited')).toMatchObject({ scope: 'identity' });
      },
    );

    it('a top-up on A takes effect on B within a second', async () => {
      const key = await createKey(a.http, org.auth, { role: 'viewer', credits: { remaining: 1 } });
      await verify(b.http, key.auth).expect(200);
      expectProblem(await verify(b.http, key.auth), 429, 'credits_exhausted');

      await a.http
        .patch(`/v1/api-keys/${key.id}`)
        .set(org.auth)
        .send({ credits: { remaining: 3 } })
        .expect(200);
      const served = await expectWithinOneSecond(
        () => verify(b.http, key.auth),
        (res) => res.status === 200,
      );
      expect(served.body.credits_remaining).toBe(2);
    });

    it('the balance survives a restart of an instance', async () => {
      const key = await createKey(a.http, org.auth, { role: 'viewer', credits: { remaining: 10 } });
      for (let i = 0; i < 3; i++) await verify(a.http, key.auth).expect(200);

      await a.close({ keepData: true });
      a = await startTestApp({ databaseUrl: b.databaseUrl, env });
      expect(
        (await a.http.get(`/v1/api-keys/${key.id}`).set(org.auth).expect(200)).body.credits.remaining,
      ).toBe(7);
      expect((await verify(a.http, key.auth).expect(200)).body.credits_remaining).toBe(6);
      expect((await verify(b.http, key.auth).expect(200)).body.credits_remaining).toBe(5);
    });
  },
);
