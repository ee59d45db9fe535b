import { createUser, expectProblem, SignedUpOrganization, signUpOrganization } from './support/factories';
import { Auth, createKey } from './support/keys';
import { startTestApp, TestApp } from './support/test-app';

const DAY_MS = 86_400_000;
const inDays = (days: number): string => new Date(Date.now() + days * DAY_MS).toISOString();
const DEFAULTS = { leak_response: 'revoke', max_key_lifetime_days: null, require_expiration: false };

/** GET|PATCH /v1/organization/policies and what they mean for keys: create, PATCH, rotation, the filter. */
describe('organization policies', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  const policiesOf = async (auth: Auth) =>
    (await t.http.get('/v1/organization/policies').set(auth).expect(200)).body;
  const setPolicies = async (auth: Auth, body: Record<string, unknown>) =>
    (await t.http.patch('/v1/organization/policies').set(auth).send(body).expect(200)).body;
  const listIds = async (auth: Auth, query: string) =>
    ((await t.http.get(`/v1/api-keys?limit=100&${query}`).set(auth).expect(200)).body.data as any[]).map(
      (key) => key.id,
    );

  describe('the policies', () => {
    let org: SignedUpOrganization;
    beforeAll(async () => {
      org = await signUpOrganization(t.http, 'Policies');
    });

    it('has the defaults until changed, and a PATCH changes only what it names', async () => {
      expect(await policiesOf(org.auth)).toEqual(DEFAULTS);
      expect(await setPolicies(org.auth, { max_key_lifetime_days: 90 })).toEqual({
        ...DEFAULTS,
        max_key_lifetime_days: 90,
      });
      expect(await setPolicies(org.auth, { leak_response: 'disable', require_expiration: true })).toEqual({
        leak_response: 'disable',
        max_key_lifetime_days: 90,
        require_expiration: true,
      });
      expect(await setPolicies(org.auth, { max_key_lifetime_days: null })).toEqual({
        leak_response: 'disable',
        max_key_lifetime_days: null,
        require_expiration: true,
      });
      expect(await policiesOf(org.auth)).toEqual({
        leak_response: 'disable',
        max_key_lifetime_days: null,
        require_expiration: true,
      });
    });

    it('audits a change as organization.policies_updated, with actor, address and user agent', async () => {
      await t.http
        .patch('/v1/organization/policies')
        .set(org.auth)
        .set('User-Agent', 'policy-test/1')
        .send({ leak_response: 'notify' })
        .expect(200);
      const log = await t.http
        .get('/v1/audit-log?action=organization.policies_updated&limit=1')
        .set(org.auth)
        .expect(200);
      expect(log.body.data[0]).toMatchObject({
        action: 'organization.policies_updated',
        actor: { type: 'user', id: org.userId },
        ip: expect.any(String),
        user_agent: 'policy-test/1',
        details: {
          changes: { leak_response: { from: 'disable', to: 'notify' } },
          policies: { leak_response: 'notify' },
        },
      });
    });

    it.each([
      ['an unknown leak_response', { leak_response: 'delete' }],
      ['a lifetime of 0 days', { max_key_lifetime_days: 0 }],
      ['a lifetime over 3650 days', { max_key_lifetime_days: 3651 }],
      ['a fractional lifetime', { max_key_lifetime_days: 1.5 }],
      ['null for require_expiration', { require_expiration: null }],
      ['null for leak_response', { leak_response: null }],
      ['an unknown field', { max_key_age: 3 }],
    ])('refuses %s (400) and changes nothing', async (_label, body) => {
      const before = await policiesOf(org.auth);
      expectProblem(
        await t.http.patch('/v1/organization/policies').set(org.auth).send(body),
        400,
        'validation_failed',
      );
      expect(await policiesOf(org.auth)).toEqual(before);
    });

    it('needs organization:read to read and organization:update to change: administrators hold both, api_manager reads', async () => {
      const developer = await createUser(t.http, org, 'developer');
      const manager = await createUser(t.http, org, 'api_manager');
      expectProblem(await t.http.get('/v1/organization/policies').set(developer.auth), 403, 'forbidden');
      await t.http.get('/v1/organization/policies').set(manager.auth).expect(200);
      expectProblem(
        await t.http.patch('/v1/organization/policies').set(manager.auth).send({ leak_response: 'revoke' }),
        403,
        'forbidden',
      );
      // The first test left require_expiration on: this key must expire.
      const adminKey = await createKey(t.http, org.auth, {
        name: 'admin key',
        role: 'administrator',
        expiration: inDays(10),
      });
      await t.http.get('/v1/organization/policies').set(adminKey.auth).expect(200);
      expectProblem(await t.http.get('/v1/organization/policies'), 401);
    });

    it("belongs to one organization: another's change is not seen", async () => {
      const other = await signUpOrganization(t.http, 'Policies other');
      await setPolicies(other.auth, { max_key_lifetime_days: 7, leak_response: 'notify' });
      expect((await policiesOf(org.auth)).max_key_lifetime_days).toBeNull();
      expect(await policiesOf(other.auth)).toEqual({
        leak_response: 'notify',
        max_key_lifetime_days: 7,
        require_expiration: false,
      });
    });
  });

  describe('keys under a maximum lifetime', () => {
    let org: SignedUpOrganization;
    beforeAll(async () => {
      org = await signUpOrganization(t.http, 'Lifetimes');
    });

    it('refuses a key without an expiration, or one further out, at create (400 policy_violation on expiration)', async () => {
      await setPolicies(org.auth, { max_key_lifetime_days: 30 });
      const before = await listIds(org.auth, '');
      for (const body of [{}, { expiration: null }, { expiration: inDays(31) }]) {
        const res = await t.http
          .post('/v1/api-keys')
          .set(org.auth)
          .send({ name: 'too long', role: 'viewer', ...body });
        const problem = expectProblem(res, 400, 'policy_violation');
        expect(res.body.rule).toBe('max_key_lifetime_days');
        expect(problem.detail).toMatch(/max_key_lifetime_days/);
        expect(problem.errors).toEqual([{ field: 'expiration', message: expect.any(String) }]);
      }
      expect(await listIds(org.auth, '')).toEqual(before);
      const allowed = await createKey(t.http, org.auth, {
        name: 'fits',
        role: 'viewer',
        expiration: inDays(29),
      });
      expect(allowed.body.expiration).toBeTruthy();
    });

    it('refuses a PATCH that removes the expiration or moves it further out; other changes of an existing key go through', async () => {
      await setPolicies(org.auth, { max_key_lifetime_days: null, require_expiration: false });
      const old = await createKey(t.http, org.auth, { name: 'from before', role: 'viewer' });
      await setPolicies(org.auth, { max_key_lifetime_days: 30 });

      for (const expiration of [null, inDays(45)]) {
        const res = await t.http.patch(`/v1/api-keys/${old.id}`).set(org.auth).send({ expiration });
        expect(expectProblem(res, 400, 'policy_violation').errors?.[0].field).toBe('expiration');
      }
      // Its other settings (the kill switch above all) stay editable.
      const renamed = await t.http
        .patch(`/v1/api-keys/${old.id}`)
        .set(org.auth)
        .send({ name: 'renamed', enabled: false })
        .expect(200);
      expect(renamed.body).toMatchObject({ name: 'renamed', enabled: false, expiration: null });
      const fixed = await t.http
        .patch(`/v1/api-keys/${old.id}`)
        .set(org.auth)
        .send({ expiration: inDays(10), enabled: true })
        .expect(200);
      expect(fixed.body.expiration).toBeTruthy();
    });

    it('refuses to rotate an existing key that breaks the policy until its expiration is set; it stays listed', async () => {
      await setPolicies(org.auth, { max_key_lifetime_days: null });
      const old = await createKey(t.http, org.auth, { name: 'rotate me', role: 'viewer' });
      await setPolicies(org.auth, { max_key_lifetime_days: 30 });
      const refused = await t.http.post(`/v1/api-keys/${old.id}/rotate`).set(org.auth).send({});
      expectProblem(refused, 400, 'policy_violation');
      expect(refused.body.rule).toBe('max_key_lifetime_days');
      // Nothing changed: the old value still works and the key is still listed.
      await t.http.get('/v1/auth/verify').set(old.auth).expect(200);
      expect(await listIds(org.auth, 'violates_policy=true')).toContain(old.id);
      await t.http
        .patch(`/v1/api-keys/${old.id}`)
        .set(org.auth)
        .send({ expiration: inDays(10) })
        .expect(200);
      const rotated = await t.http.post(`/v1/api-keys/${old.id}/rotate`).set(org.auth).send({}).expect(200);
      expect(rotated.body.expiration).toBeTruthy();
      expect(await listIds(org.auth, 'violates_policy=true')).not.toContain(old.id);

      const compliant = await createKey(t.http, org.auth, {
        name: 'ok',
        role: 'viewer',
        expiration: inDays(5),
      });
      const again = await t.http
        .post(`/v1/api-keys/${compliant.id}/rotate`)
        .set(org.auth)
        .send({})
        .expect(200);
      expect(again.body.expiration).toBe(compliant.body.expiration);
    });
  });

  describe('require_expiration', () => {
    it('refuses a key without an expiration, and allows any expiration when there is no maximum', async () => {
      const org = await signUpOrganization(t.http, 'Require expiration');
      await setPolicies(org.auth, { require_expiration: true });
      const res = await t.http.post('/v1/api-keys').set(org.auth).send({ name: 'forever', role: 'viewer' });
      expectProblem(res, 400, 'policy_violation');
      expect(res.body.rule).toBe('require_expiration');
      await createKey(t.http, org.auth, { name: 'long', role: 'viewer', expiration: inDays(2000) });
    });
  });

  describe('GET /v1/api-keys?violates_policy=', () => {
    it('lists the existing keys the policy would refuse now, and only those; false lists the others', async () => {
      const org = await signUpOrganization(t.http, 'Violations');
      const other = await signUpOrganization(t.http, 'Violations other');
      const never = await createKey(t.http, org.auth, { name: 'never expires', role: 'viewer' });
      const far = await createKey(t.http, org.auth, { name: 'far', role: 'viewer', expiration: inDays(400) });
      const near = await createKey(t.http, org.auth, {
        name: 'near',
        role: 'viewer',
        expiration: inDays(10),
      });
      const revoked = await createKey(t.http, org.auth, { name: 'revoked', role: 'viewer' });
      await t.http
        .post('/v1/credentials/revoke')
        .send({ credentials: [revoked.key] })
        .expect(202);
      await createKey(t.http, other.auth, { name: 'theirs', role: 'viewer' });
      await setPolicies(other.auth, { max_key_lifetime_days: 1 });

      // No policy yet: nothing violates it.
      expect(await listIds(org.auth, 'violates_policy=true')).toEqual([]);

      await setPolicies(org.auth, { max_key_lifetime_days: 30 });
      expect((await listIds(org.auth, 'violates_policy=true')).sort()).toEqual([never.id, far.id].sort());
      expect((await listIds(org.auth, 'violates_policy=false')).sort()).toEqual([near.id, revoked.id].sort());
      // Existing keys are untouched.
      expect((await t.http.get(`/v1/api-keys/${never.id}`).set(org.auth).expect(200)).body.status).toBe(
        'active',
      );

      await setPolicies(org.auth, { max_key_lifetime_days: null, require_expiration: true });
      expect(await listIds(org.auth, 'violates_policy=true')).toEqual([never.id]);
      expect(await listIds(org.auth, 'violates_policy=true&status=revoked')).toEqual([]);
    });

    it('refuses a value that is not a boolean (400)', async () => {
      const org = await signUpOrganization(t.http, 'Violations bad');
      expectProblem(
        await t.http.get('/v1/api-keys?violates_policy=yes').set(org.auth),
        400,
        'validation_failed',
      );
    });
  });
});
