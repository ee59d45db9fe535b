import {
  createUser,
  expectProblem,
  PASSWORD,
  listAll,
  SignedUpOrganization,
  signUpOrganization,
  uniqueEmail,
} from './support/factories';
import { startTestApp, TestApp } from './support/test-app';
import { mapFromPermissions } from '../src/roles/dto/role.dto';
import { BUILT_IN_ROLE_NAMES, builtInRolePermissions, permissionCatalogue } from '../src/roles/permissions';

type PermissionMap = Record<string, string[]>;
type Auth = { Authorization: string } | { 'X-API-Key': string };

/**
 * The built-in roles, read from the registry the modules declare them in (src/roles/permissions.ts);
 * that they match the contract is checked once, in permissions.spec.ts.
 */
const BUILT_INS: Record<string, PermissionMap> = Object.fromEntries(
  BUILT_IN_ROLE_NAMES.map((name) => [name, mapFromPermissions(builtInRolePermissions(name))]),
);

/** Order-insensitive form of a permission map: keys and action lists sorted, empty lists dropped. */
function normalize(map: PermissionMap): PermissionMap {
  return Object.fromEntries(
    Object.keys(map)
      .filter((resource) => map[resource].length > 0)
      .sort()
      .map((resource) => [resource, [...new Set(map[resource])].sort()]),
  );
}

/** `{agents: ["read"]}` → `["agents:read"]`, sorted, as verify reports permissions. */
function flat(map: PermissionMap): string[] {
  return Object.entries(map)
    .flatMap(([resource, actions]) => actions.map((action) => `${resource}:${action}`))
    .sort();
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const ROLE_ID = /^role_[0-9A-Za-z]{22}$/;

let counter = 0;
const roleName = (label: string): string => `${label}_${++counter}`;

describe('custom roles', () => {
  let t: TestApp;
  let a: SignedUpOrganization;
  let b: SignedUpOrganization;

  beforeAll(async () => {
    t = await startTestApp();
    a = await signUpOrganization(t.http, 'Roles A');
    b = await signUpOrganization(t.http, 'Roles B');
  });
  afterAll(() => t.close());

  /** Every role the organization lists, following next_cursor to the end. */
  const allRoles = (auth: Auth): Promise<any[]> => listAll(t.http, '/v1/roles', auth);

  async function createRole(auth: Auth, name: string, permissions: PermissionMap): Promise<any> {
    const res = await t.http.post('/v1/roles').set(auth).send({ role_name: name, permissions });
    expect(res.status).toBe(201);
    return res.body;
  }

  async function createKey(auth: Auth, role: string): Promise<{ id: string; key: string }> {
    const res = await t.http
      .post('/v1/api-keys')
      .set(auth)
      .send({ name: `key for ${role}`, role });
    expect(res.status).toBe(201);
    return res.body;
  }

  function verify(key: string) {
    return t.http.get('/v1/auth/verify').set({ 'X-API-Key': key });
  }

  describe('GET /v1/permissions', () => {
    it('answers the catalogue the modules declare, to any credential, and roles are written in it', async () => {
      const viewerKey = await createKey(a.auth, 'viewer');
      const res = await t.http.get('/v1/permissions').set({ 'X-API-Key': viewerKey.key }).expect(200);
      expect(res.body).toEqual({
        data: permissionCatalogue().map(({ resource, actions }) => ({ resource, actions: [...actions] })),
      });
      const flattened = res.body.data.flatMap((r: { resource: string; actions: string[] }) =>
        r.actions.map((action) => `${r.resource}:${action}`),
      );
      expect(flattened.sort()).toEqual([...builtInRolePermissions('administrator')].sort());
      await t.http.get('/v1/permissions').expect(401);
    });
  });

  describe('create and read', () => {
    it('creates a custom role and answers it as the contract shapes it', async () => {
      const name = roleName('agent_runner');
      const before = Date.now();
      const res = await t.http
        .post('/v1/roles')
        .set(a.auth)
        .send({ role_name: name, permissions: { agents: ['read', 'execute'] } })
        .expect(201);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.body).toMatchObject({ role_name: name, built_in: false });
      expect(res.body.id).toMatch(ROLE_ID);
      expect(normalize(res.body.permissions)).toEqual({ agents: ['execute', 'read'] });
      expect(res.body.created_at).toMatch(ISO);
      expect(Date.parse(res.body.created_at)).toBeGreaterThanOrEqual(before - 1000);

      const got = await t.http.get(`/v1/roles/${name}`).set(a.auth).expect(200);
      expect(got.body).toEqual(res.body);
    });

    it('lists the four built-in roles with the contract permissions, and the custom ones', async () => {
      const name = roleName('listed');
      const created = await createRole(a.auth, name, { tasks: ['read'], files: ['create', 'read'] });

      const first = await t.http.get('/v1/roles').set(a.auth).expect(200);
      expect(first.body).toHaveProperty('next_cursor');
      const builtIns = first.body.data.filter((r: any) => r.built_in);
      expect(builtIns.map((r: any) => r.role_name).sort()).toEqual(
        ['administrator', 'api_manager', 'developer', 'viewer'].sort(),
      );
      for (const role of builtIns) {
        expect(normalize(role.permissions)).toEqual(normalize(BUILT_INS[role.role_name]));
      }

      const listed = (await allRoles(a.auth)).filter((r) => !r.built_in);
      const mine = listed.find((r) => r.role_name === name);
      expect(mine).toEqual(created);
      expect(normalize(mine.permissions)).toEqual({ files: ['create', 'read'], tasks: ['read'] });
      // Custom roles come newest first.
      const times = listed.map((r) => Date.parse(r.created_at));
      expect([...times].sort((x, y) => y - x)).toEqual(times);
    });

    it('answers each built-in role by name', async () => {
      for (const [name, permissions] of Object.entries(BUILT_INS)) {
        const res = await t.http.get(`/v1/roles/${name}`).set(a.auth).expect(200);
        expect(res.body.role_name).toBe(name);
        expect(res.body.built_in).toBe(true);
        expect(normalize(res.body.permissions)).toEqual(normalize(permissions));
      }
    });

    it('answers 404 for a role that does not exist', async () => {
      for (const method of ['get', 'patch', 'delete'] as const) {
        const req = t.http[method]('/v1/roles/no_such_role').set(a.auth);
        const res = await (method === 'patch' ? req.send({ permissions: { agents: ['read'] } }) : req);
        expectProblem(res, 404, 'not_found');
      }
    });

    it('refuses built-in names and duplicates with 409, and never changes a built-in role', async () => {
      for (const name of ['viewer', 'developer', 'administrator', 'api_manager']) {
        const res = await t.http
          .post('/v1/roles')
          .set(a.auth)
          .send({ role_name: name, permissions: { agents: ['read'] } });
        expectProblem(res, 409);

        const patched = await t.http
          .patch(`/v1/roles/${name}`)
          .set(a.auth)
          .send({ permissions: { agents: ['read'] } });
        expectProblem(patched, 409);

        const deleted = await t.http.delete(`/v1/roles/${name}`).set(a.auth);
        expectProblem(deleted, 409);

        const after = await t.http.get(`/v1/roles/${name}`).set(a.auth).expect(200);
        expect(normalize(after.body.permissions)).toEqual(normalize(BUILT_INS[name]));
      }

      const name = roleName('taken');
      const original = await createRole(a.auth, name, { agents: ['read'] });
      const duplicate = await t.http
        .post('/v1/roles')
        .set(a.auth)
        .send({ role_name: name, permissions: { tasks: ['read'] } });
      expectProblem(duplicate, 409, 'role_name_taken');
      const after = await t.http.get(`/v1/roles/${name}`).set(a.auth).expect(200);
      expect(after.body).toEqual(original);
    });
  });

  describe('validation', () => {
    const invalid: [string, Record<string, unknown>, string][] = [
      [
        'an unknown resource',
        { role_name: 'bad_resource', permissions: { gizmos: ['read'] } },
        'permissions',
      ],
      [
        'an unknown action',
        { role_name: 'bad_action', permissions: { agents: ['read', 'fly'] } },
        'permissions',
      ],
      [
        'actions that are not a list',
        { role_name: 'bad_actions', permissions: { agents: 'read' } },
        'permissions',
      ],
      ['permissions that are a list', { role_name: 'bad_list', permissions: ['agents:read'] }, 'permissions'],
      ['missing permissions', { role_name: 'no_perms' }, 'permissions'],
      ['an upper-case role_name', { role_name: 'BadName', permissions: { agents: ['read'] } }, 'role_name'],
      ['a role_name with spaces', { role_name: 'bad name', permissions: { agents: ['read'] } }, 'role_name'],
      ['a one-character role_name', { role_name: 'x', permissions: { agents: ['read'] } }, 'role_name'],
      [
        'a role_name of 51 characters',
        { role_name: 'r'.repeat(51), permissions: { agents: ['read'] } },
        'role_name',
      ],
      ['a missing role_name', { permissions: { agents: ['read'] } }, 'role_name'],
      [
        'an unknown field',
        { role_name: 'extra_field', permissions: { agents: ['read'] }, built_in: true },
        'built_in',
      ],
    ];

    it.each(invalid)(
      'refuses %s with 400 naming the field, and creates nothing',
      async (_label, body, field) => {
        const rolesBefore = await allRoles(a.auth);
        const res = await t.http.post('/v1/roles').set(a.auth).send(body);
        expectProblem(res, 400, 'validation_failed');
        expect(Array.isArray(res.body.errors)).toBe(true);
        expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
        for (const e of res.body.errors) expect(typeof e.message).toBe('string');

        const rolesAfter = await allRoles(a.auth);
        expect(rolesAfter.map((r) => r.role_name).sort()).toEqual(rolesBefore.map((r) => r.role_name).sort());
        if (typeof body.role_name === 'string' && /^[a-z][a-z0-9_]{1,49}$/.test(body.role_name)) {
          expectProblem(await t.http.get(`/v1/roles/${body.role_name}`).set(a.auth), 404, 'not_found');
        }
      },
    );

    it('refuses malformed JSON with 400', async () => {
      const res = await t.http
        .post('/v1/roles')
        .set(a.auth)
        .set('Content-Type', 'application/json')
        .send('{"role_name": "broken", ');
      expectProblem(res, 400);
      expectProblem(await t.http.get('/v1/roles/broken').set(a.auth), 404, 'not_found');
    });

    it('refuses an invalid PATCH with 400 and leaves the role unchanged', async () => {
      const name = roleName('patch_target');
      const original = await createRole(a.auth, name, { agents: ['read'] });
      const bodies = [
        { permissions: { agents: ['read', 'teleport'] } },
        { permissions: { nowhere: ['read'] } },
        { permissions: { agents: ['read'] }, role_name: 'renamed' },
        {},
      ];
      for (const body of bodies) {
        const res = await t.http.patch(`/v1/roles/${name}`).set(a.auth).send(body);
        expectProblem(res, 400, 'validation_failed');
        expect(res.body.errors.length).toBeGreaterThan(0);
      }
      const after = await t.http.get(`/v1/roles/${name}`).set(a.auth).expect(200);
      expect(after.body).toEqual(original);
      expectProblem(await t.http.get('/v1/roles/renamed').set(a.auth), 404, 'not_found');
    });

    it('needs a credential', async () => {
      expectProblem(await t.http.get('/v1/roles'), 401);
      expectProblem(
        await t.http
          .post('/v1/roles')
          .send({ role_name: roleName('anon'), permissions: { agents: ['read'] } }),
        401,
      );
    });
  });

  describe('holders', () => {
    it('a user and a key hold a custom role, and a PATCH applies to both on the very next request', async () => {
      const name = roleName('runner');
      const initial = { agents: ['read', 'execute'] };
      await createRole(a.auth, name, initial);

      const user = await createUser(t.http, a, name);
      const userRes = await t.http.get(`/v1/users/${user.id}`).set(a.auth).expect(200);
      expect(userRes.body.role).toBe(name);

      const key = await createKey(a.auth, name);
      expect(key).toMatchObject({ role: name, permissions: flat(initial) });

      // The key: verify reports the role's permissions (and warms any cache).
      const v1 = await verify(key.key).expect(200);
      expect(v1.body).toMatchObject({ valid: true, key_id: key.id, role: name, permissions: flat(initial) });
      expectProblem(await t.http.get('/v1/roles').set({ 'X-API-Key': key.key }), 403, 'forbidden');

      // The user: lacks roles:read for now.
      expectProblem(await t.http.get('/v1/roles').set(user.auth), 403, 'forbidden');
      expectProblem(await t.http.get(`/v1/roles/${name}`).set(user.auth), 403, 'forbidden');

      const widened = { agents: ['read'], roles: ['read'], tasks: ['read'] };
      const patched = await t.http
        .patch(`/v1/roles/${name}`)
        .set(a.auth)
        .send({ permissions: widened })
        .expect(200);
      expect(normalize(patched.body.permissions)).toEqual(normalize(widened));
      expect(patched.body.role_name).toBe(name);
      expect(patched.body.built_in).toBe(false);

      const v2 = await verify(key.key).expect(200);
      expect(v2.body.permissions).toEqual(flat(widened));
      await t.http.get('/v1/roles').set({ 'X-API-Key': key.key }).expect(200);
      const keyView = await t.http.get(`/v1/api-keys/${key.id}`).set(a.auth).expect(200);
      expect(keyView.body.permissions).toEqual(flat(widened));

      const asUser = await t.http.get(`/v1/roles/${name}`).set(user.auth).expect(200);
      expect(normalize(asUser.body.permissions)).toEqual(normalize(widened));

      // And narrowing takes effect at once too.
      const narrowed = { agents: ['read'] };
      await t.http.patch(`/v1/roles/${name}`).set(a.auth).send({ permissions: narrowed }).expect(200);
      const v3 = await verify(key.key).expect(200);
      expect(v3.body.permissions).toEqual(['agents:read']);
      expectProblem(await t.http.get('/v1/roles').set({ 'X-API-Key': key.key }), 403, 'forbidden');
      expectProblem(await t.http.get('/v1/roles').set(user.auth), 403, 'forbidden');
    });

    it('a personal key of a user with a custom role never exceeds the role, even after the role widens', async () => {
      const name = roleName('keyholder');
      await createRole(a.auth, name, { api_keys: ['create', 'read'], agents: ['read'] });
      const user = await createUser(t.http, a, name);

      // The user may mint a key of a role within their own permissions...
      const viewerish = roleName('narrow');
      await createRole(a.auth, viewerish, { agents: ['read'] });
      const key = await createKey(user.auth, viewerish);
      expect((await verify(key.key).expect(200)).body.permissions).toEqual(['agents:read']);

      // ...but not one holding more than they do.
      expectProblem(
        await t.http.post('/v1/api-keys').set(user.auth).send({ name: 'too strong', role: 'developer' }),
        403,
        'privilege_escalation',
      );

      // Widening the key's role beyond the owner leaves the key capped at the owner's permissions.
      await t.http
        .patch(`/v1/roles/${viewerish}`)
        .set(a.auth)
        .send({ permissions: { agents: ['read', 'execute'], users: ['read'] } })
        .expect(200);
      expect((await verify(key.key).expect(200)).body.permissions).toEqual(['agents:read']);

      // Widening the owner's role lifts the cap on the very next request.
      await t.http
        .patch(`/v1/roles/${name}`)
        .set(a.auth)
        .send({ permissions: { api_keys: ['create', 'read'], agents: ['read', 'execute'] } })
        .expect(200);
      expect((await verify(key.key).expect(200)).body.permissions).toEqual(['agents:execute', 'agents:read']);
    });

    it('refuses to delete a role still held (409 role_in_use) until nobody holds it', async () => {
      const name = roleName('held');
      await createRole(a.auth, name, { agents: ['read'] });
      const user = await createUser(t.http, a, name);
      const key = await createKey(a.auth, name);

      const both = await t.http.delete(`/v1/roles/${name}`).set(a.auth);
      expectProblem(both, 409, 'role_in_use');

      await t.http.patch(`/v1/users/${user.id}`).set(a.auth).send({ role: 'viewer' }).expect(200);
      const keyOnly = await t.http.delete(`/v1/roles/${name}`).set(a.auth);
      expectProblem(keyOnly, 409, 'role_in_use');
      await t.http.get(`/v1/roles/${name}`).set(a.auth).expect(200);
      await verify(key.key).expect(200);

      await t.http.delete(`/v1/api-keys/${key.id}`).set(a.auth).expect(204);
      const gone = await t.http.delete(`/v1/roles/${name}`).set(a.auth).expect(204);
      expect(gone.text).toBe('');

      expectProblem(await t.http.get(`/v1/roles/${name}`).set(a.auth), 404, 'not_found');
      expect((await allRoles(a.auth)).map((r) => r.role_name)).not.toContain(name);
      expectProblem(await t.http.delete(`/v1/roles/${name}`).set(a.auth), 404, 'not_found');

      // A deleted role can no longer be given to anyone.
      const refused = await t.http
        .post('/v1/users')
        .set(a.auth)
        .send({ email: uniqueEmail('late'), password: PASSWORD, name: 'Late', role: name });
      expectProblem(refused, 400, 'unknown_role');
      expectProblem(
        await t.http.post('/v1/api-keys').set(a.auth).send({ name: 'late', role: name }),
        400,
        'unknown_role',
      );
    });

    it('a role held only by a user cannot be deleted either', async () => {
      const name = roleName('user_held');
      await createRole(a.auth, name, { tasks: ['read'] });
      const user = await createUser(t.http, a, name);
      expectProblem(await t.http.delete(`/v1/roles/${name}`).set(a.auth), 409, 'role_in_use');
      await t.http.patch(`/v1/users/${user.id}`).set(a.auth).send({ role: 'developer' }).expect(200);
      await t.http.delete(`/v1/roles/${name}`).set(a.auth).expect(204);
    });
  });

  describe('no escalation', () => {
    let lite: { auth: { Authorization: string } };

    beforeAll(async () => {
      await createRole(a.auth, 'role_admin_lite', {
        roles: ['create', 'read', 'update'],
        agents: ['read'],
      });
      lite = await createUser(t.http, a, 'role_admin_lite');
    });

    it('may create a role within its own permissions, never one beyond them', async () => {
      const beyond = roleName('sneaky');
      const refused = await t.http
        .post('/v1/roles')
        .set(lite.auth)
        .send({ role_name: beyond, permissions: { users: ['read'] } });
      expectProblem(refused, 403, 'privilege_escalation');
      expect(refused.body.detail).toContain('users:read');
      expectProblem(await t.http.get(`/v1/roles/${beyond}`).set(a.auth), 404, 'not_found');

      const mixed = roleName('mixed');
      expectProblem(
        await t.http
          .post('/v1/roles')
          .set(lite.auth)
          .send({ role_name: mixed, permissions: { agents: ['read', 'execute'] } }),
        403,
        'privilege_escalation',
      );
      expectProblem(await t.http.get(`/v1/roles/${mixed}`).set(a.auth), 404, 'not_found');

      const within = roleName('within');
      const created = await t.http
        .post('/v1/roles')
        .set(lite.auth)
        .send({ role_name: within, permissions: { agents: ['read'] } })
        .expect(201);
      expect(normalize(created.body.permissions)).toEqual({ agents: ['read'] });
    });

    it('may not PATCH a role to add a permission it lacks', async () => {
      const name = roleName('lite_owned');
      const original = (
        await t.http
          .post('/v1/roles')
          .set(lite.auth)
          .send({ role_name: name, permissions: { agents: ['read'] } })
          .expect(201)
      ).body;

      for (const permissions of [{ agents: ['read', 'delete'] }, { agents: ['read'], api_keys: ['read'] }]) {
        expectProblem(
          await t.http.patch(`/v1/roles/${name}`).set(lite.auth).send({ permissions }),
          403,
          'privilege_escalation',
        );
      }
      const after = await t.http.get(`/v1/roles/${name}`).set(a.auth).expect(200);
      expect(after.body).toEqual(original);

      // Within its permissions, it may.
      const ok = await t.http
        .patch(`/v1/roles/${name}`)
        .set(lite.auth)
        .send({ permissions: { agents: ['read'], roles: ['read'] } })
        .expect(200);
      expect(normalize(ok.body.permissions)).toEqual({ agents: ['read'], roles: ['read'] });
    });

    it('may not edit a stronger role, even to weaken it', async () => {
      const name = roleName('strong');
      const original = await createRole(a.auth, name, { users: ['delete'], agents: ['read'] });
      expectProblem(
        await t.http
          .patch(`/v1/roles/${name}`)
          .set(lite.auth)
          .send({ permissions: { agents: ['read'] } }),
        403,
        'privilege_escalation',
      );
      const after = await t.http.get(`/v1/roles/${name}`).set(a.auth).expect(200);
      expect(after.body).toEqual(original);
    });

    it('needs roles:delete to delete a role', async () => {
      const name = roleName('undeletable');
      await createRole(a.auth, name, { agents: ['read'] });
      expectProblem(await t.http.delete(`/v1/roles/${name}`).set(lite.auth), 403, 'forbidden');
      await t.http.get(`/v1/roles/${name}`).set(a.auth).expect(200);
    });

    it('may not hand its role or a stronger one to a key beyond its permissions', async () => {
      // role_admin_lite lacks api_keys:create: key creation is refused outright.
      expectProblem(
        await t.http.post('/v1/api-keys').set(lite.auth).send({ name: 'nope', role: 'role_admin_lite' }),
        403,
        'forbidden',
      );
    });
  });

  describe('isolation between organizations', () => {
    it('another organization gets 404 for a custom role, never sees it, and may reuse its name', async () => {
      const name = roleName('private');
      const original = await createRole(a.auth, name, { agents: ['read', 'execute'] });

      expectProblem(await t.http.get(`/v1/roles/${name}`).set(b.auth), 404, 'not_found');
      expectProblem(
        await t.http
          .patch(`/v1/roles/${name}`)
          .set(b.auth)
          .send({ permissions: { agents: ['read'] } }),
        404,
        'not_found',
      );
      expectProblem(await t.http.delete(`/v1/roles/${name}`).set(b.auth), 404, 'not_found');

      const bRoles = await allRoles(b.auth);
      expect(bRoles.map((r) => r.id)).not.toContain(original.id);
      expect(bRoles.filter((r) => !r.built_in).map((r) => r.role_name)).not.toContain(name);

      // B cannot give A's role to a user or a key.
      expectProblem(
        await t.http
          .post('/v1/users')
          .set(b.auth)
          .send({ email: uniqueEmail('b'), password: PASSWORD, name: 'B', role: name }),
        400,
        'unknown_role',
      );
      expectProblem(
        await t.http.post('/v1/api-keys').set(b.auth).send({ name: 'b key', role: name }),
        400,
        'unknown_role',
      );

      // B may create its own role of the same name; the two stay separate.
      const bRole = await t.http
        .post('/v1/roles')
        .set(b.auth)
        .send({ role_name: name, permissions: { tasks: ['read'] } })
        .expect(201);
      expect(bRole.body.id).not.toBe(original.id);

      const aView = await t.http.get(`/v1/roles/${name}`).set(a.auth).expect(200);
      expect(aView.body).toEqual(original);
      const bView = await t.http.get(`/v1/roles/${name}`).set(b.auth).expect(200);
      expect(normalize(bView.body.permissions)).toEqual({ tasks: ['read'] });
      expect((await allRoles(a.auth)).map((r) => r.id)).not.toContain(bRole.body.id);

      // A change in B does not reach A's holders.
      const aKey = await createKey(a.auth, name);
      await t.http
        .patch(`/v1/roles/${name}`)
        .set(b.auth)
        .send({ permissions: { files: ['read'] } })
        .expect(200);
      expect((await verify(aKey.key).expect(200)).body.permissions).toEqual([
        'agents:execute',
        'agents:read',
      ]);

      // And B deleting its role leaves A's in place.
      await t.http.delete(`/v1/roles/${name}`).set(b.auth).expect(204);
      await t.http.get(`/v1/roles/${name}`).set(a.auth).expect(200);
    });
  });
});
