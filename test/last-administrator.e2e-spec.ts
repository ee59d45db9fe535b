import { createUser, expectProblem, signUpOrganization } from './support/factories';
import { startTestApp, TestApp } from './support/test-app';

/**
 * An organization always keeps an active administrator: demoting (to a built-in or custom role) or
 * deactivating the last one is refused with 409 last_administrator and changes nothing, also when two
 * administrators demote or deactivate each other at the same moment.
 */
describe('the last active administrator', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t?.close());

  type Auth = { Authorization: string };

  /** A user as read by the first of `readers` still allowed to read users (one may have been demoted). */
  const userOf = async (readers: Auth[], id: string) => {
    for (const auth of readers) {
      const res = await t.http.get(`/v1/users/${id}`).set(auth);
      if (res.status === 200) return res.body as { role: string; active: boolean };
    }
    throw new Error(`no reader could read user ${id}`);
  };

  const activeAdministrators = async (readers: Auth[], ids: string[]) => {
    const users = await Promise.all(ids.map((id) => userOf(readers, id)));
    return ids.filter((_, i) => users[i].role === 'administrator' && users[i].active);
  };

  it('refuses the only administrator changing its own role to viewer, or to a custom role without admin', async () => {
    const org = await signUpOrganization(t.http, 'Sole admin');
    await t.http
      .post('/v1/roles')
      .set(org.auth)
      .send({
        role_name: 'almost_admin',
        permissions: { users: ['read', 'create', 'update'], api_keys: ['read'] },
      })
      .expect(201);
    for (const role of ['viewer', 'api_manager', 'almost_admin']) {
      const res = await t.http.patch(`/v1/users/${org.userId}`).set(org.auth).send({ role });
      expect(expectProblem(res, 409, 'last_administrator').detail).toMatch(/administrator/);
    }
    // Nothing changed: still the administrator, and still able to act as one.
    expect(await userOf([org.auth], org.userId)).toMatchObject({ role: 'administrator', active: true });
    await t.http.get('/v1/users').set(org.auth).expect(200);
    // A change that keeps the role is not refused.
    await t.http.patch(`/v1/users/${org.userId}`).set(org.auth).send({ name: 'Still admin' }).expect(200);
  });

  it('lets an administrator step down once another is there, and then refuses the other', async () => {
    const org = await signUpOrganization(t.http, 'Two admins');
    const second = await createUser(t.http, org, 'administrator');
    await t.http.patch(`/v1/users/${org.userId}`).set(org.auth).send({ role: 'viewer' }).expect(200);
    expectProblem(
      await t.http.patch(`/v1/users/${second.id}`).set(second.auth).send({ role: 'developer' }),
      409,
      'last_administrator',
    );
    // Deactivating oneself stays refused for its own reason.
    expectProblem(
      await t.http.post(`/v1/users/${second.id}/deactivate`).set(second.auth),
      409,
      'cannot_deactivate_self',
    );
    expect(await activeAdministrators([org.auth, second.auth], [org.userId, second.id])).toEqual([second.id]);
  });

  it('refuses deactivating the last active administrator by another user that holds its permissions', async () => {
    const org = await signUpOrganization(t.http, 'Deactivation');
    const second = await createUser(t.http, org, 'administrator');
    await t.http.post(`/v1/users/${org.userId}/deactivate`).set(second.auth).expect(200);
    // The one left is the last: demoting it is refused, and so would deactivating it be by anyone.
    expectProblem(
      await t.http.patch(`/v1/users/${second.id}`).set(second.auth).send({ role: 'viewer' }),
      409,
      'last_administrator',
    );
    expect(await activeAdministrators([org.auth, second.auth], [org.userId, second.id])).toEqual([second.id]);
  });

  /** A request that changes an administrator: who sends it is the test's choice. */
  type Change = { path: string; method: 'patch' | 'post'; body: object };

  it.each([
    [
      'demote each other',
      (id: string): Change => ({ path: `/v1/users/${id}`, method: 'patch', body: { role: 'viewer' } }),
    ],
    [
      'deactivate each other',
      (id: string): Change => ({ path: `/v1/users/${id}/deactivate`, method: 'post', body: {} }),
    ],
    [
      'demote themselves',
      (_id: string, self: string): Change => ({
        path: `/v1/users/${self}`,
        method: 'patch',
        body: { role: 'viewer' },
      }),
    ],
  ] as const)(
    'two administrators that %s at the same moment: one succeeds, the other is refused, one administrator is left',
    async (_label, changeOf) => {
      // Several rounds, each on a fresh organization, so the two requests meet in the database.
      for (let round = 0; round < 5; round += 1) {
        const org = await signUpOrganization(t.http, 'Concurrent');
        const second = await createUser(t.http, org, 'administrator');
        const send = (auth: Auth, target: string, self: string) => {
          const { path, method, body } = changeOf(target, self);
          return t.http[method](path).set(auth).send(body);
        };
        const answers = await Promise.all([
          send(org.auth, second.id, org.userId),
          send(second.auth, org.userId, second.id),
        ]);
        const statuses = answers.map((res) => res.status).sort();
        // The refused one may also be refused as no longer an administrator itself (its token's role
        // is read per request): what matters is that exactly one change happened.
        expect(statuses[0]).toBe(200);
        expect(statuses[1]).toBeGreaterThanOrEqual(400);
        const refused = answers.find((res) => res.status !== 200)!;
        expect([401, 403, 409]).toContain(refused.status);
        expect(await activeAdministrators([org.auth, second.auth], [org.userId, second.id])).toHaveLength(1);
      }
    },
  );
});
