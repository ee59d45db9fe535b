import { randomBytes } from 'node:crypto';
import type { Response } from 'supertest';
import {
  bearer,
  createUser,
  CreatedUser,
  expectProblem,
  firstTwoPages,
  listAll,
  PASSWORD,
  signIn,
  SignedUpOrganization,
  signUpOrganization,
  uniqueEmail,
} from './support/factories';
import { nextMillisecond } from './support/pagination';
import { startTestApp, TestApp } from './support/test-app';

const ISO_DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const USER_ID = /^usr_[0-9A-Za-z]{22}$/;
const TEAM_ID = /^team_[0-9A-Za-z]{22}$/;
const USER_FIELDS = ['active', 'created_at', 'deactivated_at', 'email', 'id', 'name', 'role', 'updated_at'];

interface UserBody {
  id: string;
  email: string;
  name: string;
  role: string;
  active: boolean;
  deactivated_at: string | null;
  created_at: string;
  updated_at: string;
}

/** No password, hash or password-ish field in a response, however deeply nested. */
function expectNoSecrets(body: unknown, ...passwords: string[]): void {
  const text = JSON.stringify(body);
  for (const password of [PASSWORD, ...passwords]) expect(text).not.toContain(password);
  expect(text).not.toMatch(/\$2[aby]\$\d\d\$/); // a bcrypt hash
  expect(text).not.toMatch(/"[a-z_]*(password|hash)[a-z_]*"\s*:/i);
}

const fieldsOf = (problem: { errors?: { field: string }[] }): string[] => [
  ...new Set((problem.errors ?? []).map((e) => e.field)),
];

/**
 * Users and teams over HTTP: bodies, validation, status codes and the permissions the routes require.
 * Organization scoping, self-deactivation and the other rules of the services behind these routes are
 * test/medium/accounts.medium-spec.ts's.
 */
describe('accounts', () => {
  let t: TestApp;
  let orgA: SignedUpOrganization;
  let orgB: SignedUpOrganization;

  beforeAll(async () => {
    t = await startTestApp();
    orgA = await signUpOrganization(t.http, 'A');
    orgB = await signUpOrganization(t.http, 'B');
  });
  afterAll(() => t.close());

  const emailsOf = async (org: SignedUpOrganization): Promise<string[]> =>
    (await listAll<UserBody>(t.http, '/v1/users', org.auth)).map((u) => u.email);

  describe('users', () => {
    it('creates a user: 201 with the public shape, email lower-cased, and no password or hash', async () => {
      const local = `Dana.Dev-${randomBytes(4).toString('hex')}`;
      const res = await t.http
        .post('/v1/users')
        .set(orgA.auth)
        .send({
          email: `  ${local}@Example.TEST `,
          password: PASSWORD,
          name: 'Dana Developer',
          role: 'developer',
        })
        .expect(201);

      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(Object.keys(res.body).sort()).toEqual(USER_FIELDS);
      expect(res.body).toEqual({
        id: expect.stringMatching(USER_ID),
        email: `${local.toLowerCase()}@example.test`,
        name: 'Dana Developer',
        role: 'developer',
        active: true,
        deactivated_at: null,
        created_at: expect.stringMatching(ISO_DATE),
        updated_at: expect.stringMatching(ISO_DATE),
      });
      expectNoSecrets(res.body);

      // Read back, alone and in the list, the same and just as clean.
      const got = await t.http.get(`/v1/users/${res.body.id}`).set(orgA.auth).expect(200);
      expect(got.body).toEqual(res.body);
      expectNoSecrets(got.body);
      const list = await t.http.get('/v1/users').set(orgA.auth).expect(200);
      expect(list.body.data).toContainEqual(res.body);
      expectNoSecrets(list.body);

      // The lower-cased address signs in.
      await signIn(t.http, res.body.email);
    });

    it('refuses a duplicate email with 409 email_taken, whatever its case or organization', async () => {
      const email = uniqueEmail('dup');
      const body = { email, password: PASSWORD, name: 'First', role: 'viewer' };
      const first = await t.http.post('/v1/users').set(orgA.auth).send(body).expect(201);

      expectProblem(await t.http.post('/v1/users').set(orgA.auth).send(body), 409, 'email_taken');
      expectProblem(
        await t.http
          .post('/v1/users')
          .set(orgA.auth)
          .send({ ...body, email: email.toUpperCase(), name: 'Second' }),
        409,
        'email_taken',
      );
      // Sign-in is by email alone, so an email is unique across organizations too.
      expectProblem(await t.http.post('/v1/users').set(orgB.auth).send(body), 409, 'email_taken');

      const matching = (await listAll<UserBody>(t.http, '/v1/users', orgA.auth)).filter(
        (u) => u.email === email,
      );
      expect(matching).toEqual([first.body]);
      expect(await emailsOf(orgB)).not.toContain(email);
    });

    const valid = (): Record<string, unknown> => ({
      email: uniqueEmail('bad-body'),
      password: PASSWORD,
      name: 'Bad Body',
      role: 'viewer',
    });
    const badBodies: [string, (body: Record<string, unknown>) => Record<string, unknown>, string[]][] = [
      ['a missing email', ({ email: _email, ...rest }) => rest, ['email']],
      ['a malformed email', (body) => ({ ...body, email: 'not-an-email' }), ['email']],
      ['a short password', (body) => ({ ...body, password: 'Sh0rt!' }), ['password']],
      // 37 characters but 74 bytes: bcrypt would silently ignore what follows byte 72.
      ['a password over 72 bytes', (body) => ({ ...body, password: 'é'.repeat(37) }), ['password']],
      ['an unknown field', (body) => ({ ...body, is_superuser: true }), ['is_superuser']],
      [
        'a missing name and a non-string role',
        ({ name: _name, ...rest }) => ({ ...rest, role: 7 }),
        ['name', 'role'],
      ],
    ];

    it.each(badBodies)(
      'refuses %s with 400 errors [{field, message}] and creates nothing',
      async (_label, mutate, fields) => {
        const base = valid();
        const body = mutate(base);
        const res = await t.http.post('/v1/users').set(orgA.auth).send(body);
        const problem = expectProblem(res, 400, 'validation_failed');
        expect(fieldsOf(problem).sort()).toEqual([...fields].sort());
        for (const error of problem.errors!) {
          expect(error).toEqual({ field: expect.any(String), message: expect.any(String) });
          expect(error.message.length).toBeGreaterThan(0);
        }
        expect(JSON.stringify(problem)).not.toContain(PASSWORD);
        expect(await emailsOf(orgA)).not.toContain(base.email);
      },
    );

    it('refuses an unknown role with 400 unknown_role and creates nothing', async () => {
      const body: Record<string, unknown> = { ...valid(), role: 'superuser' };
      const problem = expectProblem(
        await t.http.post('/v1/users').set(orgA.auth).send(body),
        400,
        'unknown_role',
      );
      expect(fieldsOf(problem)).toEqual(['role']);
      expect(await emailsOf(orgA)).not.toContain(body.email);
    });

    it('answers 404 for a user id that does not exist or is not a user id', async () => {
      for (const id of [`usr_${'0'.repeat(22)}`, 'team_0000000000000000000000', 'nope']) {
        expectProblem(await t.http.get(`/v1/users/${id}`).set(orgA.auth), 404, 'not_found');
        expectProblem(
          await t.http.patch(`/v1/users/${id}`).set(orgA.auth).send({ name: 'x' }),
          404,
          'not_found',
        );
      }
    });

    it("changes name and role with PATCH; a demoted user's next request has the new permissions", async () => {
      const member = await createUser(t.http, orgA, 'administrator');
      await t.http.get('/v1/users').set(member.auth).expect(200);

      const patched = await t.http
        .patch(`/v1/users/${member.id}`)
        .set(orgA.auth)
        .send({ role: 'viewer', name: 'Demoted' })
        .expect(200);
      expect(patched.body).toMatchObject({ id: member.id, role: 'viewer', name: 'Demoted', active: true });
      expectNoSecrets(patched.body);

      // Same token, next request: the viewer cannot manage users or teams.
      expectProblem(await t.http.get('/v1/users').set(member.auth), 403, 'forbidden');
      expectProblem(await t.http.post('/v1/teams').set(member.auth).send({ name: 'Nope' }), 403, 'forbidden');

      const got = await t.http.get(`/v1/users/${member.id}`).set(orgA.auth).expect(200);
      expect(got.body).toMatchObject({ role: 'viewer', name: 'Demoted' });
    });

    it("applies a promotion to the user's next request", async () => {
      const member = await createUser(t.http, orgA, 'viewer');
      expectProblem(await t.http.get('/v1/users').set(member.auth), 403, 'forbidden');
      await t.http.patch(`/v1/users/${member.id}`).set(orgA.auth).send({ role: 'administrator' }).expect(200);
      const list = await t.http.get('/v1/users').set(member.auth).expect(200);
      expect(list.body.data.map((u: UserBody) => u.id)).toContain(member.id);
    });

    // Refused by the name's own rule (no control characters), before the database could refuse it.
    it('refuses text the database cannot store (a NUL character) with 400 naming the field, never 500, and stores nothing', async () => {
      const email = uniqueEmail('nul');
      const created = expectProblem(
        await t.http
          .post('/v1/users')
          .set(orgA.auth)
          .send({ email, password: PASSWORD, name: 'Nul\u0000Name', role: 'viewer' }),
        400,
        'validation_failed',
      );
      expect(created.errors).toEqual([
        { field: 'name', message: 'name must not contain control characters' },
      ]);
      expect(await emailsOf(orgA)).not.toContain(email);

      const member = await createUser(t.http, orgA, 'viewer');
      const before = (await t.http.get(`/v1/users/${member.id}`).set(orgA.auth).expect(200)).body;
      expectProblem(
        await t.http.patch(`/v1/users/${member.id}`).set(orgA.auth).send({ name: 'x\u0000y' }),
        400,
        'validation_failed',
      );
      expect((await t.http.get(`/v1/users/${member.id}`).set(orgA.auth).expect(200)).body).toEqual(before);
    });

    it('refuses a PATCH to an unknown role or with unknown fields (400) and changes nothing', async () => {
      const member = await createUser(t.http, orgA, 'developer');
      const before = (await t.http.get(`/v1/users/${member.id}`).set(orgA.auth).expect(200)).body;

      const unknownRole = expectProblem(
        await t.http
          .patch(`/v1/users/${member.id}`)
          .set(orgA.auth)
          .send({ role: 'overlord', name: 'Changed' }),
        400,
        'unknown_role',
      );
      expect(fieldsOf(unknownRole)).toEqual(['role']);
      const unknownField = expectProblem(
        await t.http.patch(`/v1/users/${member.id}`).set(orgA.auth).send({ email: 'new@example.test' }),
        400,
        'validation_failed',
      );
      expect(fieldsOf(unknownField)).toEqual(['email']);
      const longPassword = expectProblem(
        await t.http
          .patch(`/v1/users/${member.id}`)
          .set(orgA.auth)
          .send({ password: 'é'.repeat(37) }),
        400,
        'validation_failed',
      );
      expect(fieldsOf(longPassword)).toEqual(['password']);

      const after = await t.http.get(`/v1/users/${member.id}`).set(orgA.auth).expect(200);
      expect(after.body).toEqual(before);
    });

    it('changes a password with PATCH: the new one signs in, the old one no longer does', async () => {
      const member = await createUser(t.http, orgA, 'viewer');
      const res = await t.http
        .patch(`/v1/users/${member.id}`)
        .set(orgA.auth)
        .send({ password: 'a-brand-new-password' })
        .expect(200);
      expectNoSecrets(res.body, 'a-brand-new-password');
      expectProblem(
        await t.http.post('/v1/auth/token').send({ email: member.email, password: PASSWORD }),
        401,
        'invalid_credentials',
      );
      await signIn(t.http, member.email, 'a-brand-new-password');
    });

    it('deactivates a user (200): their token is refused at once and they are listed as inactive', async () => {
      const member = await createUser(t.http, orgA, 'administrator');
      await t.http.get('/v1/users').set(member.auth).expect(200);

      const res = await t.http.post(`/v1/users/${member.id}/deactivate`).set(orgA.auth).expect(200);
      expect(Object.keys(res.body).sort()).toEqual(USER_FIELDS);
      expect(res.body).toMatchObject({
        id: member.id,
        active: false,
        deactivated_at: expect.stringMatching(ISO_DATE),
      });
      expectNoSecrets(res.body);

      expectProblem(await t.http.get('/v1/users').set(member.auth), 401, 'user_deactivated');
      expectProblem(
        await t.http.post('/v1/auth/token').send({ email: member.email, password: PASSWORD }),
        401,
        'invalid_credentials',
      );

      // Deactivating again changes nothing.
      const again = await t.http.post(`/v1/users/${member.id}/deactivate`).set(orgA.auth).expect(200);
      expect(again.body).toEqual(res.body);

      const inactive = await listAll<UserBody>(t.http, '/v1/users?active=false', orgA.auth);
      expect(inactive.map((u) => u.id)).toContain(member.id);
      expect(inactive.every((u) => !u.active)).toBe(true);
      const active = await listAll<UserBody>(t.http, '/v1/users?active=true', orgA.auth);
      expect(active.map((u) => u.id)).not.toContain(member.id);
      expect(active.map((u) => u.id)).toContain(orgA.userId);
    });

    it('activates a deactivated user (200): they can sign in and work again', async () => {
      const member = await createUser(t.http, orgA, 'administrator');
      await t.http.post(`/v1/users/${member.id}/deactivate`).set(orgA.auth).expect(200);

      const res = await t.http.post(`/v1/users/${member.id}/activate`).set(orgA.auth).expect(200);
      expect(res.body).toMatchObject({ id: member.id, active: true, deactivated_at: null });
      expectNoSecrets(res.body);

      const token = await signIn(t.http, member.email);
      await t.http.get('/v1/users').set(bearer(token)).expect(200);
      // Activating an active user changes nothing.
      const again = await t.http.post(`/v1/users/${member.id}/activate`).set(orgA.auth).expect(200);
      expect(again.body).toMatchObject({ id: member.id, active: true, deactivated_at: null });
    });
  });

  describe.each(['viewer', 'developer', 'api_manager'])('a %s', (role) => {
    let member: CreatedUser;
    let target: CreatedUser;
    let teamId: string;

    beforeAll(async () => {
      member = await createUser(t.http, orgA, role);
      target = await createUser(t.http, orgA, 'viewer');
      teamId = (
        await t.http
          .post('/v1/teams')
          .set(orgA.auth)
          .send({ name: `Guarded ${role}` })
          .expect(201)
      ).body.id;
    });

    it('cannot create users (403 forbidden), not even with a lesser role, and nothing is created', async () => {
      for (const newRole of ['viewer', role, 'administrator']) {
        const email = uniqueEmail('escalation');
        expectProblem(
          await t.http
            .post('/v1/users')
            .set(member.auth)
            .send({ email, password: PASSWORD, name: 'Escalation', role: newRole }),
          403,
          'forbidden',
        );
        expect(await emailsOf(orgA)).not.toContain(email);
      }
    });

    it('cannot read, change, deactivate or activate users (403 forbidden)', async () => {
      const before = (await t.http.get(`/v1/users/${target.id}`).set(orgA.auth).expect(200)).body;
      const attempts = [
        () => t.http.get('/v1/users').set(member.auth),
        () => t.http.get(`/v1/users/${target.id}`).set(member.auth),
        () => t.http.patch(`/v1/users/${target.id}`).set(member.auth).send({ name: 'Changed' }),
        () => t.http.patch(`/v1/users/${member.id}`).set(member.auth).send({ role: 'administrator' }),
        () => t.http.post(`/v1/users/${target.id}/deactivate`).set(member.auth),
        () => t.http.post(`/v1/users/${target.id}/activate`).set(member.auth),
      ];
      for (const attempt of attempts) expectProblem(await attempt(), 403, 'forbidden');

      expect((await t.http.get(`/v1/users/${target.id}`).set(orgA.auth).expect(200)).body).toEqual(before);
      const self = await t.http.get(`/v1/users/${member.id}`).set(orgA.auth).expect(200);
      expect(self.body.role).toBe(role);
    });

    it('cannot create, read or change teams (403 forbidden)', async () => {
      const name = `Forbidden ${randomBytes(3).toString('hex')}`;
      const attempts = [
        () => t.http.post('/v1/teams').set(member.auth).send({ name }),
        () => t.http.get('/v1/teams').set(member.auth),
        () => t.http.get(`/v1/teams/${teamId}`).set(member.auth),
        () => t.http.post(`/v1/teams/${teamId}/members`).set(member.auth).send({ user_id: member.id }),
        () => t.http.delete(`/v1/teams/${teamId}/members/${member.id}`).set(member.auth),
      ];
      for (const attempt of attempts) expectProblem(await attempt(), 403, 'forbidden');

      const teams = await listAll<{ id: string; name: string; member_ids: string[] }>(
        t.http,
        '/v1/teams',
        orgA.auth,
      );
      expect(teams.map((team) => team.name)).not.toContain(name);
      expect(teams.find((team) => team.id === teamId)!.member_ids).toEqual([]);
    });
  });

  describe('user list pagination', () => {
    let org: SignedUpOrganization;
    let newestFirst: string[];

    beforeAll(async () => {
      org = await signUpOrganization(t.http, 'Paged');
      const created: string[] = [org.userId];
      for (let i = 0; i < 3; i++) {
        await nextMillisecond();
        const res = await t.http
          .post('/v1/users')
          .set(org.auth)
          .send({ email: uniqueEmail(`paged-${i}`), password: PASSWORD, name: `Paged ${i}`, role: 'viewer' })
          .expect(201);
        created.push(res.body.id);
      }
      newestFirst = created.reverse();
    });

    it('follows next_cursor one user at a time, newest first, without duplicates', async () => {
      const seen: string[] = [];
      let cursor: string | null = null;
      for (let page = 0; page < 10; page++) {
        const res: Response = await t.http
          .get('/v1/users')
          .query(cursor ? { limit: 1, cursor } : { limit: 1 })
          .set(org.auth)
          .expect(200);
        expect(Object.keys(res.body).sort()).toEqual(['data', 'next_cursor']);
        expect(res.body.data).toHaveLength(1);
        seen.push(res.body.data[0].id);
        cursor = res.body.next_cursor;
        if (!cursor) break;
        expect(typeof cursor).toBe('string');
      }
      expect(seen).toEqual(newestFirst);
      expect(new Set(seen).size).toBe(seen.length);
    });

    it('ends with next_cursor null when the last page is exactly full', async () => {
      const [first, second] = await firstTwoPages(t.http, '/v1/users', org.auth, 2);
      expect(first.body.data.map((u: UserBody) => u.id)).toEqual(newestFirst.slice(0, 2));
      expect(second.body.data.map((u: UserBody) => u.id)).toEqual(newestFirst.slice(2));
      expect(second.body.next_cursor).toBeNull();

      const all = await t.http.get('/v1/users').set(org.auth).expect(200);
      expect(all.body.data.map((u: UserBody) => u.id)).toEqual(newestFirst);
      expect(all.body.next_cursor).toBeNull();
    });

    it.each(['0', '101', '-1', '2.5', 'ten'])('refuses limit=%s with 400', async (limit) => {
      const problem = expectProblem(
        await t.http.get('/v1/users').query({ limit }).set(org.auth),
        400,
        'validation_failed',
      );
      expect(fieldsOf(problem)).toEqual(['limit']);
    });

    it('refuses a cursor it did not issue with 400 invalid_cursor', async () => {
      const encode = (value: string): string => Buffer.from(value).toString('base64url');
      const id = `usr_${'0'.repeat(22)}`;
      for (const cursor of [
        'garbage',
        encode('{"a":1}'),
        encode('[1]'),
        encode(`["not a date","${id}"]`),
        encode(`[0,"${id}"]`),
        // Well-formed JSON the database cannot take: a year before its range, a NUL in the id.
        encode(`["-271821-04-20T00:00:00.000Z","${id}"]`),
        encode('["2020-01-01T00:00:00.000Z","usr_\\u0000"]'),
      ]) {
        const problem = expectProblem(
          await t.http.get('/v1/users').query({ cursor }).set(org.auth),
          400,
          'invalid_cursor',
        );
        expect(fieldsOf(problem)).toEqual(['cursor']);
      }
    });
  });

  describe('teams', () => {
    type TeamBody = { id: string; name: string; member_ids: string[]; created_at: string };
    let member: CreatedUser;
    let other: CreatedUser;

    beforeAll(async () => {
      member = await createUser(t.http, orgA, 'developer');
      other = await createUser(t.http, orgA, 'viewer');
    });

    const createTeam = async (org: SignedUpOrganization, name: string): Promise<TeamBody> =>
      (await t.http.post('/v1/teams').set(org.auth).send({ name }).expect(201)).body;

    it('creates a team: 201 {id, name, member_ids, created_at}', async () => {
      const name = `Platform ${randomBytes(3).toString('hex')}`;
      const res = await t.http.post('/v1/teams').set(orgA.auth).send({ name }).expect(201);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.body).toEqual({
        id: expect.stringMatching(TEAM_ID),
        name,
        member_ids: [],
        created_at: expect.stringMatching(ISO_DATE),
      });
    });

    it('refuses a duplicate name in the organization with 409; another organization may use it', async () => {
      const name = `Research ${randomBytes(3).toString('hex')}`;
      const team = await createTeam(orgA, name);
      expectProblem(await t.http.post('/v1/teams').set(orgA.auth).send({ name }), 409, 'team_name_taken');
      await createTeam(orgB, name);
      const named = (await listAll<TeamBody>(t.http, '/v1/teams', orgA.auth)).filter((x) => x.name === name);
      expect(named).toEqual([team]);
    });

    it('refuses a NUL character in a team name or member id with 400, never 500', async () => {
      const name = `Nul\u0000${randomBytes(3).toString('hex')}`;
      expect(
        expectProblem(await t.http.post('/v1/teams').set(orgA.auth).send({ name }), 400, 'validation_failed')
          .errors,
      ).toEqual([{ field: 'name', message: 'name must not contain control characters' }]);
      const team = await createTeam(orgA, `Nul ${randomBytes(3).toString('hex')}`);
      expectProblem(
        await t.http.delete(`/v1/teams/${team.id}/members/usr_%00`).set(orgA.auth),
        400,
        'invalid_characters',
      );
      const names = (await listAll<TeamBody>(t.http, '/v1/teams', orgA.auth)).map((x) => x.name);
      expect(names).not.toContain(name);
    });

    it('refuses an invalid team body with 400', async () => {
      for (const [body, field] of [
        [{}, 'name'],
        [{ name: '' }, 'name'],
        [{ name: 'x'.repeat(101) }, 'name'],
        [{ name: 'Fine', color: 'red' }, 'color'],
      ] as const) {
        const problem = expectProblem(
          await t.http.post('/v1/teams').set(orgA.auth).send(body),
          400,
          'validation_failed',
        );
        expect(fieldsOf(problem)).toEqual([field]);
      }
    });

    it('lists teams newest first and gets one by id', async () => {
      const older = await createTeam(orgA, `Older ${randomBytes(3).toString('hex')}`);
      await nextMillisecond();
      const newer = await createTeam(orgA, `Newer ${randomBytes(3).toString('hex')}`);

      const list = await t.http.get('/v1/teams').set(orgA.auth).expect(200);
      const ids = list.body.data.map((x: TeamBody) => x.id);
      expect(ids.indexOf(newer.id)).toBeGreaterThanOrEqual(0);
      expect(ids.indexOf(newer.id)).toBeLessThan(ids.indexOf(older.id));
      expect(list.body.data).toContainEqual(older);

      const [page, next] = await firstTwoPages(t.http, '/v1/teams', orgA.auth, 1);
      expect(page.body.data).toEqual([newer]);
      expect(next.body.data).toEqual([older]);

      expect((await t.http.get(`/v1/teams/${older.id}`).set(orgA.auth).expect(200)).body).toEqual(older);
      for (const id of [`team_${'0'.repeat(22)}`, member.id, 'nope']) {
        expectProblem(await t.http.get(`/v1/teams/${id}`).set(orgA.auth), 404, 'not_found');
      }
    });

    it('adds members (idempotently) and removes them', async () => {
      const team = await createTeam(orgA, `Members ${randomBytes(3).toString('hex')}`);
      const add = (userId: string) =>
        t.http.post(`/v1/teams/${team.id}/members`).set(orgA.auth).send({ user_id: userId });

      const added = await add(member.id).expect(200);
      expect(added.body).toEqual({ ...team, member_ids: [member.id] });
      const again = await add(member.id).expect(200);
      expect(again.body.member_ids).toEqual([member.id]);
      expect((await add(other.id).expect(200)).body.member_ids).toEqual([member.id, other.id]);
      expect((await t.http.get(`/v1/teams/${team.id}`).set(orgA.auth).expect(200)).body.member_ids).toEqual([
        member.id,
        other.id,
      ]);

      const removed = await t.http
        .delete(`/v1/teams/${team.id}/members/${member.id}`)
        .set(orgA.auth)
        .expect(204);
      expect(removed.text).toBe('');
      expect((await t.http.get(`/v1/teams/${team.id}`).set(orgA.auth).expect(200)).body.member_ids).toEqual([
        other.id,
      ]);

      // No longer (or never) a member: 404.
      for (const userId of [member.id, orgA.userId]) {
        expectProblem(
          await t.http.delete(`/v1/teams/${team.id}/members/${userId}`).set(orgA.auth),
          404,
          'not_found',
        );
      }
      expect((await t.http.get(`/v1/teams/${team.id}`).set(orgA.auth).expect(200)).body.member_ids).toEqual([
        other.id,
      ]);
    });

    it('refuses to add a user of another organization, or no user at all (404), or a bad user_id (400)', async () => {
      const team = await createTeam(orgA, `Closed ${randomBytes(3).toString('hex')}`);
      for (const userId of [orgB.userId, `usr_${'0'.repeat(22)}`]) {
        expectProblem(
          await t.http.post(`/v1/teams/${team.id}/members`).set(orgA.auth).send({ user_id: userId }),
          404,
          'not_found',
        );
      }
      for (const body of [
        {},
        { user_id: 'team_0000000000000000000000' },
        { user_id: member.id, role: 'lead' },
      ]) {
        expectProblem(
          await t.http.post(`/v1/teams/${team.id}/members`).set(orgA.auth).send(body),
          400,
          'validation_failed',
        );
      }
      expectProblem(
        await t.http
          .post(`/v1/teams/team_${'0'.repeat(22)}/members`)
          .set(orgA.auth)
          .send({ user_id: member.id }),
        404,
        'not_found',
      );
      expect((await t.http.get(`/v1/teams/${team.id}`).set(orgA.auth).expect(200)).body.member_ids).toEqual(
        [],
      );
    });
  });
});
