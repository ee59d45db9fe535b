import type { Response } from 'supertest';
import {
  expectProblem,
  PASSWORD,
  listAll,
  SignedUpOrganization,
  signUpOrganization,
  uniqueEmail,
} from './support/factories';
import type { AuditEntry } from './support/audit-log';
import { startTestApp, TestApp } from './support/test-app';

const USER_AGENT = 'gatehouse-org-audit-e2e/1.0';
const COOKIE = 'gatehouse_session';
const CSRF = { 'X-Gatehouse-CSRF': '1' };
const HEX_64 = /[0-9a-f]{64}/i;

/**
 * The organization audit log (issue 25, "Leaked keys" in the contract): every administrative change
 * (users, teams and their members, roles, dashboard sign-ins and sign-outs) is recorded once, with its
 * actor, IP and user agent, in the organization's hash chain; a change that fails records nothing; the
 * log filters by actor and by action group. The app trusts the loopback proxy here, so each request's
 * X-Forwarded-For is its client address, and each change below comes from an address of its own.
 */
describe('organization audit log', () => {
  let t: TestApp;
  let org: SignedUpOrganization;
  let other: SignedUpOrganization;

  /** The entries of the organization, newest first, following next_cursor. */
  const orgLog = (
    auth: Record<string, string>,
    filters: Record<string, string> = {},
  ): Promise<AuditEntry[]> => listAll(t.http, '/v1/audit-log', auth, filters);

  /** The headers of a change made from `ip` by `auth`. */
  const from = (ip: string, auth: Record<string, string> = org.auth): Record<string, string> => ({
    ...auth,
    'User-Agent': USER_AGENT,
    'X-Forwarded-For': ip,
  });

  const sessionCookieOf = (res: Response): string => {
    const line = ([] as string[])
      .concat(res.headers['set-cookie'] ?? [])
      .find((value) => value.startsWith(`${COOKIE}=`));
    expect(line).toBeDefined();
    return line!.slice(COOKIE.length + 1).split(';')[0];
  };

  // Filled by the beforeAll below: what was done, to find it in the log.
  let dana: { id: string; email: string };
  let teamId: string;
  let roleId: string;
  let keyId: string;
  let keyTeamId: string;
  let sessionId: string;

  beforeAll(async () => {
    t = await startTestApp({ env: { TRUST_PROXY: 'loopback' } });
    org = await signUpOrganization(t.http, 'Org audit');
    other = await signUpOrganization(t.http, 'Org audit other');

    const role = await t.http
      .post('/v1/roles')
      .set(from('203.0.113.11'))
      .send({ role_name: 'agent_runner', permissions: { agents: ['read'] } })
      .expect(201);
    roleId = role.body.id;
    await t.http
      .patch('/v1/roles/agent_runner')
      .set(from('203.0.113.12'))
      .send({ permissions: { agents: ['read', 'execute'], tasks: ['read'] } })
      .expect(200);

    const email = uniqueEmail('dana');
    const user = await t.http
      .post('/v1/users')
      .set(from('203.0.113.13'))
      .send({ email, password: PASSWORD, name: 'Dana', role: 'agent_runner' })
      .expect(201);
    dana = { id: user.body.id, email };
    // The password set here is Dana's from now on (the dashboard sign-in below uses it).
    await t.http
      .patch(`/v1/users/${dana.id}`)
      .set(from('203.0.113.14'))
      .send({ name: 'Dana D.', role: 'developer', password: `${PASSWORD}-2` })
      .expect(200);

    const team = await t.http
      .post('/v1/teams')
      .set(from('203.0.113.15'))
      .send({ name: 'Platform' })
      .expect(201);
    teamId = team.body.id;
    await t.http
      .post(`/v1/teams/${teamId}/members`)
      .set(from('203.0.113.16'))
      .send({ user_id: dana.id })
      .expect(200);
    // Adding a member again changes nothing, and records nothing.
    await t.http
      .post(`/v1/teams/${teamId}/members`)
      .set(from('203.0.113.99'))
      .send({ user_id: dana.id })
      .expect(200);
    await t.http.delete(`/v1/teams/${teamId}/members/${dana.id}`).set(from('203.0.113.17')).expect(204);

    await t.http.post(`/v1/users/${dana.id}/deactivate`).set(from('203.0.113.18')).expect(200);
    // Deactivating an inactive user, activating an active one: no change, no entry.
    await t.http.post(`/v1/users/${dana.id}/deactivate`).set(from('203.0.113.99')).expect(200);
    await t.http.post(`/v1/users/${dana.id}/activate`).set(from('203.0.113.19')).expect(200);
    await t.http.post(`/v1/users/${dana.id}/activate`).set(from('203.0.113.99')).expect(200);

    await t.http.delete('/v1/roles/agent_runner').set(from('203.0.113.20')).expect(204);

    // Dashboard: a sign-in, a sign-out, and a second sign-out of the same (ended) session.
    const signedIn = await t.http
      .post('/v1/auth/session')
      .set(from('203.0.113.21', {}))
      .send({ email, password: `${PASSWORD}-2` })
      .expect(200);
    const cookie = sessionCookieOf(signedIn);
    const signOut = (ip: string) =>
      t.http
        .delete('/v1/auth/session')
        .set(from(ip, {}))
        .set(CSRF)
        .set('Cookie', `${COOKIE}=${cookie}`)
        .expect(204);
    await signOut('203.0.113.22');
    await signOut('203.0.113.99');

    // An API key acting: its entries name the key.
    const key = await t.http
      .post('/v1/api-keys')
      .set(org.auth)
      .send({ name: 'automation', role: 'administrator', type: 'service' })
      .expect(201);
    keyId = key.body.id;
    const keyTeam = await t.http
      .post('/v1/teams')
      .set(from('203.0.113.23', { 'X-API-Key': key.body.key }))
      .send({ name: 'Automated' })
      .expect(201);
    keyTeamId = keyTeam.body.id;

    const [signedInEntry] = await orgLog(org.auth, { action: 'session.signed_in' });
    sessionId = signedInEntry?.details.session_id;
  });
  afterAll(() => t?.close());

  it('records every administrative change once, with actor, ip, user agent and details', async () => {
    const admin = { type: 'user', id: org.userId };
    const expected: [string, string, { type: string; id: string | null }, Record<string, unknown>][] = [
      [
        'role.created',
        '203.0.113.11',
        admin,
        { role_id: roleId, role_name: 'agent_runner', permissions: ['agents:read'] },
      ],
      [
        'role.updated',
        '203.0.113.12',
        admin,
        {
          role_id: roleId,
          role_name: 'agent_runner',
          permissions: ['agents:execute', 'agents:read', 'tasks:read'],
          previous_permissions: ['agents:read'],
        },
      ],
      ['user.created', '203.0.113.13', admin, { user_id: dana.id, email: dana.email, role: 'agent_runner' }],
      [
        'user.updated',
        '203.0.113.14',
        admin,
        {
          user_id: dana.id,
          email: dana.email,
          fields: ['name', 'password', 'role'],
          role: 'developer',
          previous_role: 'agent_runner',
        },
      ],
      ['team.created', '203.0.113.15', admin, { team_id: teamId, name: 'Platform' }],
      ['team.member_added', '203.0.113.16', admin, { team_id: teamId, name: 'Platform', user_id: dana.id }],
      ['team.member_removed', '203.0.113.17', admin, { team_id: teamId, name: 'Platform', user_id: dana.id }],
      ['user.deactivated', '203.0.113.18', admin, { user_id: dana.id, email: dana.email }],
      ['user.activated', '203.0.113.19', admin, { user_id: dana.id, email: dana.email }],
      [
        'role.deleted',
        '203.0.113.20',
        admin,
        {
          role_id: roleId,
          role_name: 'agent_runner',
          permissions: ['agents:execute', 'agents:read', 'tasks:read'],
        },
      ],
      [
        'session.signed_in',
        '203.0.113.21',
        { type: 'user', id: dana.id },
        { session_id: expect.stringMatching(/^\w+_/) },
      ],
      ['session.signed_out', '203.0.113.22', { type: 'user', id: dana.id }, { session_id: sessionId }],
    ];

    const entries = await orgLog(org.auth);
    const administrative = entries.filter((entry) => !entry.action.startsWith('key.'));
    // Oldest first, as they were made; nothing else (no entry for the repeated no-op requests).
    const inOrder = [...administrative].reverse();
    expect(inOrder.map((entry) => entry.action)).toEqual([
      ...expected.map(([action]) => action),
      'team.created',
    ]);
    for (const [index, [action, ip, actor, details]] of expected.entries()) {
      expect(inOrder[index]).toEqual({
        id: expect.stringMatching(/^aud_/),
        action,
        key_id: null,
        actor,
        ip,
        user_agent: USER_AGENT,
        created_at: expect.any(String),
        details,
      });
    }
    expect(inOrder.at(-1)).toMatchObject({
      action: 'team.created',
      actor: { type: 'api_key', id: keyId },
      ip: '203.0.113.23',
      user_agent: USER_AGENT,
      details: { team_id: keyTeamId, name: 'Automated' },
    });
    expect(entries.some((entry) => entry.ip === '203.0.113.99')).toBe(false);
  });

  it('keeps every entry in the one hash chain, which still verifies', async () => {
    const entries = await orgLog(org.auth);
    const res = await t.http.get('/v1/audit-log/integrity').set(org.auth).expect(200);
    expect(res.body).toMatchObject({ valid: true, entries: entries.length, first_invalid_id: null });
  });

  it('never shows a password, a hash or a session token', async () => {
    const res = await t.http.get('/v1/audit-log').query({ limit: 100 }).set(org.auth).expect(200);
    expect(res.text).not.toContain(PASSWORD);
    expect(res.text).not.toMatch(HEX_64);
    expect(res.text).not.toMatch(/"[^"]*(hash|password|token)[^"]*"\s*:/i);
  });

  describe('filters', () => {
    it('by action group: user.* is every user. action and nothing else', async () => {
      const users = await orgLog(org.auth, { action: 'user.*' });
      expect(users.map((entry) => entry.action)).toEqual([
        'user.activated',
        'user.deactivated',
        'user.updated',
        'user.created',
      ]);
      expect((await orgLog(org.auth, { action: 'team.*' })).map((entry) => entry.action)).toEqual([
        'team.created',
        'team.member_removed',
        'team.member_added',
        'team.created',
      ]);
      expect((await orgLog(org.auth, { action: 'session.*' })).map((entry) => entry.action)).toEqual([
        'session.signed_out',
        'session.signed_in',
      ]);
      // An exact name still matches that action only.
      const created = await orgLog(org.auth, { action: 'team.created' });
      expect(created.map((entry) => entry.details.team_id)).toEqual([keyTeamId, teamId]);
    });

    it('by actor: a user, an API key, a kind of actor, and with an action group', async () => {
      const byDana = await orgLog(org.auth, { actor_id: dana.id });
      expect(byDana.map((entry) => entry.action)).toEqual(['session.signed_out', 'session.signed_in']);

      const byKey = await orgLog(org.auth, { actor_id: keyId });
      expect(byKey.map((entry) => [entry.action, entry.details.team_id])).toEqual([
        ['team.created', keyTeamId],
      ]);
      expect(await orgLog(org.auth, { actor_type: 'api_key' })).toEqual(byKey);

      const adminRoles = await orgLog(org.auth, { actor_id: org.userId, action: 'role.*' });
      expect(adminRoles.map((entry) => entry.action)).toEqual([
        'role.deleted',
        'role.updated',
        'role.created',
      ]);
      const adminTeams = await orgLog(org.auth, { actor_type: 'user', action: 'team.*' });
      expect(adminTeams.every((entry) => entry.actor.id === org.userId)).toBe(true);
      expect(adminTeams).toHaveLength(3);
    });

    it("never shows another organization's entries, whatever the filter", async () => {
      expect(await orgLog(other.auth, { actor_id: org.userId })).toEqual([]);
      expect(await orgLog(other.auth, { actor_id: dana.id })).toEqual([]);
      expect(await orgLog(other.auth, { action: 'role.*' })).toEqual([]);
    });

    it('refuses a filter it does not know with 400 naming the field', async () => {
      for (const [query, field] of [
        [{ action: 'user.' }, 'action'],
        [{ action: 'user*' }, 'action'],
        [{ action: 'user.%' }, 'action'],
        [{ action: '*' }, 'action'],
        [{ action: 'nothing.*' }, 'action'],
        [{ action: 'user.exploded' }, 'action'],
        [{ actor_type: 'robot' }, 'actor_type'],
        [{ actor_id: 'DROP TABLE' }, 'actor_id'],
        [{ actor_id: 'usr_short' }, 'actor_id'],
      ] as [Record<string, string>, string][]) {
        const res = await t.http.get('/v1/audit-log').query(query).set(org.auth);
        const problem = expectProblem(res, 400, 'validation_failed');
        expect(problem.errors?.map((error) => error.field)).toEqual([field]);
      }
    });
  });

  describe('names behind the ids (?expand=actor,key)', () => {
    let deletedKeyId: string;
    let liveKeyId: string;

    beforeAll(async () => {
      const deleted = await t.http
        .post('/v1/api-keys')
        .set(org.auth)
        .send({ name: 'retired-import', role: 'viewer', type: 'service' })
        .expect(201);
      deletedKeyId = deleted.body.id;
      await t.http.delete(`/v1/api-keys/${deletedKeyId}`).set(org.auth).expect(204);
      const live = await t.http
        .post('/v1/api-keys')
        .set(org.auth)
        .send({ name: 'still-here', role: 'viewer', type: 'service' })
        .expect(201);
      liveKeyId = live.body.id;
    });

    const expanded = async (query: string): Promise<any[]> =>
      (await t.http.get(`/v1/audit-log?limit=100&${query}`).set(org.auth).expect(200)).body.data;

    it('names user actors by email and name, and key actors by key name', async () => {
      const entries = await expanded('expand=actor');
      const byAdmin = entries.find((entry) => entry.action === 'role.created');
      expect(byAdmin.actor).toEqual({ type: 'user', id: org.userId, name: 'Admin', email: org.email });
      // Dana's entries name her as she is now (renamed to "Dana D." after they were written).
      const byDana = entries.find((entry) => entry.action === 'session.signed_in');
      expect(byDana.actor).toEqual({ type: 'user', id: dana.id, name: 'Dana D.', email: dana.email });
      const byKey = entries.find(
        (entry) => entry.action === 'team.created' && entry.actor.type === 'api_key',
      );
      expect(byKey.actor).toEqual({ type: 'api_key', id: keyId, name: 'automation', email: null });
      // Only what was asked for: no `key` without expand=key.
      expect(entries.every((entry) => !('key' in entry))).toBe(true);
    });

    it('names keys, and marks a key deleted since, with expand=key; comma-separated or repeated alike', async () => {
      const commas = await expanded('expand=actor,key');
      expect(await expanded('expand=actor&expand=key')).toEqual(commas);
      const deleted = commas.filter((entry) => entry.key_id === deletedKeyId);
      expect(deleted.map((entry) => entry.action)).toEqual(['key.deleted', 'key.created']);
      for (const entry of deleted) {
        expect(entry.key).toEqual({ id: deletedKeyId, name: 'retired-import', deleted: true });
      }
      const live = commas.find((entry) => entry.key_id === liveKeyId);
      expect(live.key).toEqual({ id: liveKeyId, name: 'still-here', deleted: false });
      const keyless = commas.find((entry) => entry.action === 'role.created');
      expect(keyless.key).toBeNull();
      expect(keyless.actor.email).toBe(org.email);
    });

    it("leaves the entries' shape as it was without expand", async () => {
      for (const entry of await expanded('')) {
        expect(Object.keys(entry).sort()).toEqual(
          ['action', 'actor', 'created_at', 'details', 'id', 'ip', 'key_id', 'user_agent'].sort(),
        );
        expect(Object.keys(entry.actor).sort()).toEqual(['id', 'type']);
      }
    });

    it("names the actors of a key's own log too", async () => {
      const res = await t.http
        .get(`/v1/api-keys/${liveKeyId}/audit-log`)
        .query({ expand: 'actor' })
        .set(org.auth)
        .expect(200);
      expect(res.body.data.map((entry: AuditEntry) => [entry.action, entry.actor])).toEqual([
        ['key.created', { type: 'user', id: org.userId, name: 'Admin', email: org.email }],
      ]);
    });

    it('shows another organization none of these names', async () => {
      const theirs = (await t.http.get('/v1/audit-log?expand=actor,key').set(other.auth).expect(200)).body
        .data;
      const named = JSON.stringify(theirs);
      for (const name of ['retired-import', 'still-here', 'automation', org.email, dana.email]) {
        expect(named).not.toContain(name);
      }
    });

    it('refuses an expansion it does not know with 400 naming expand', async () => {
      for (const query of ['expand=secrets', 'expand=actor,password', 'expand=']) {
        const problem = expectProblem(
          await t.http.get(`/v1/audit-log?${query}`).set(org.auth),
          400,
          'validation_failed',
        );
        expect(problem.errors?.map((error) => error.field)).toEqual(['expand']);
      }
    });
  });

  describe('a change that fails records nothing', () => {
    it('duplicate team or role name, invalid body, taken email, unknown member, role in use, failed sign-in', async () => {
      const before = await orgLog(org.auth);
      const failing = 'Failing change';

      expectProblem(await t.http.post('/v1/teams').set(from('198.51.100.1')).send({ name: 'Platform' }), 409);
      expectProblem(await t.http.post('/v1/teams').set(from('198.51.100.1')).send({ name: '' }), 400);
      expectProblem(
        await t.http
          .post('/v1/users')
          .set(from('198.51.100.1'))
          .send({ email: dana.email, password: PASSWORD, name: failing, role: 'viewer' }),
        409,
      );
      expectProblem(
        await t.http
          .post('/v1/users')
          .set(from('198.51.100.1'))
          .send({ email: uniqueEmail('x'), password: 'short', name: failing, role: 'viewer' }),
        400,
      );
      expectProblem(
        await t.http.patch(`/v1/users/${dana.id}`).set(from('198.51.100.1')).send({ role: 'no_such_role' }),
        400,
      );
      expectProblem(
        await t.http.delete(`/v1/teams/${teamId}/members/${dana.id}`).set(from('198.51.100.1')),
        404,
      );
      await t.http
        .post('/v1/roles')
        .set(from('198.51.100.1'))
        .send({ role_name: 'held', permissions: { agents: ['read'] } })
        .expect(201);
      await t.http.patch(`/v1/users/${dana.id}`).set(from('198.51.100.2')).send({ role: 'held' }).expect(200);
      expectProblem(await t.http.delete('/v1/roles/held').set(from('198.51.100.1')), 409, 'role_in_use');
      expectProblem(
        await t.http
          .post('/v1/roles')
          .set(from('198.51.100.1'))
          .send({ role_name: 'held', permissions: { agents: ['read'] } }),
        409,
      );

      // Failed sign-ins: a wrong password and an unknown email, both answered alike, neither recorded.
      const wrong = await t.http
        .post('/v1/auth/session')
        .set(from('198.51.100.1', {}))
        .send({ email: dana.email, password: 'not-the-password' });
      const unknown = await t.http
        .post('/v1/auth/session')
        .set(from('198.51.100.1', {}))
        .send({ email: uniqueEmail('nobody'), password: 'not-the-password' });
      expectProblem(wrong, 401);
      expectProblem(unknown, 401);
      expect(unknown.body.code).toBe(wrong.body.code);
      expect(unknown.body.detail).toBe(wrong.body.detail);

      const after = await orgLog(org.auth);
      const added = after.slice(0, after.length - before.length);
      expect(after.slice(added.length)).toEqual(before);
      // Only the two changes that succeeded.
      expect(added.map((entry) => [entry.action, entry.ip])).toEqual([
        ['user.updated', '198.51.100.2'],
        ['role.created', '198.51.100.1'],
      ]);
      const res = await t.http.get('/v1/audit-log/integrity').set(org.auth).expect(200);
      expect(res.body).toMatchObject({ valid: true, entries: after.length, first_invalid_id: null });
    });
  });
});
