import { createHmac } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { mapFromPermissions } from '../src/roles/dto/role.dto';
import { builtInRolePermissions } from '../src/roles/permissions';
import type { Response } from 'supertest';
import { ApiKeyFormat } from '../src/api-keys/api-key-format';
import {
  CreatedUser,
  createUser,
  expectProblem,
  SignedUpOrganization,
  signUpOrganization,
} from './support/factories';
import { oneConnection, OneConnection } from './support/one-connection';
import { startTestApp, TestApp } from './support/test-app';

/**
 * The API-key feature over HTTP: creating, listing, reading, changing, rotating and deleting keys,
 * presenting them, every way a key is refused, permissions (no escalation, a personal key never
 * exceeding its owner) and organization isolation.
 */

type Auth = Record<string, string>;
type Json = Record<string, any>;

const KEY_VALUE = /^sk_[0-9A-Za-z]{49}$/;
const KEY_ID = /^key_[0-9A-Za-z]{22}$/;
const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const DAY_MS = 86_400_000;

// Built-in roles from the registry (their match with the contract: src/roles/permissions.spec.ts).
const VIEWER = [...builtInRolePermissions('viewer')].sort();
const DEVELOPER = [...builtInRolePermissions('developer')].sort();

const bearer = (value: string): Auth => ({ Authorization: `Bearer ${value}` });
const sorted = (values: string[]): string[] => [...values].sort();
const ids = (res: Response): string[] => res.body.data.map((key: Json) => key.id);

let t: TestApp;

beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t?.close());

/** A response with the given status; on mismatch the failure shows the body. */
function expectStatus(res: Response, status: number): void {
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${res.text}`);
}

/** A 400 whose `errors` has the contract's shape and names `field`. */
function expectFieldError(res: Response, field: string, code = 'validation_failed'): void {
  expectProblem(res, 400, code);
  expect(Array.isArray(res.body.errors)).toBe(true);
  for (const error of res.body.errors) {
    expect(error).toEqual({ field: expect.stringMatching(/\S/), message: expect.stringMatching(/\S/) });
  }
  expect(res.body.errors.map((e: Json) => e.field)).toContain(field);
}

async function createKey(auth: Auth, body: Json): Promise<Json> {
  const res = await t.http.post('/v1/api-keys').set(auth).send(body);
  expectStatus(res, 201);
  expect(res.body.key).toMatch(KEY_VALUE);
  return res.body;
}

async function getKey(auth: Auth, id: string): Promise<Json> {
  const res = await t.http.get(`/v1/api-keys/${id}`).set(auth);
  expectStatus(res, 200);
  return res.body;
}

function verify(value: string): Promise<Response> {
  return t.http.get('/v1/auth/verify').set(bearer(value));
}

async function expectVerified(value: string): Promise<Json> {
  const res = await verify(value);
  expectStatus(res, 200);
  expect(res.body.valid).toBe(true);
  return res.body;
}

/** Every key of the caller's organization, following cursors. */
async function listAll(auth: Auth, query: Record<string, string> = {}): Promise<Json[]> {
  const out: Json[] = [];
  let cursor: string | null = null;
  do {
    const res: Response = await t.http
      .get('/v1/api-keys')
      .query({ ...query, limit: '100', ...(cursor ? { cursor } : {}) })
      .set(auth);
    expectStatus(res, 200);
    out.push(...res.body.data);
    cursor = res.body.next_cursor;
  } while (cursor);
  return out;
}

async function listIds(auth: Auth, query: Record<string, string> = {}): Promise<string[]> {
  return (await listAll(auth, query)).map((key) => key.id);
}

async function auditLog(auth: Auth, id: string): Promise<Response> {
  const res = await t.http.get(`/v1/api-keys/${id}/audit-log`).query({ limit: '100' }).set(auth);
  expectStatus(res, 200);
  return res;
}

/** Polls `read` until `done` holds or `timeoutMs` passes; returns the last value read. */
async function pollUntil<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await read();
  while (!done(value) && Date.now() < deadline) {
    await sleep(200);
    value = await read();
  }
  return value;
}

async function sleepUntilPast(iso: string, marginMs = 150): Promise<void> {
  const wait = Date.parse(iso) + marginMs - Date.now();
  if (wait > 0) await sleep(wait);
}

/** The stored form of a key value per the contract: HMAC-SHA256 under the server secret. */
const hashOf = (value: string): string =>
  createHmac('sha256', t.config.API_KEY_HASH_SECRET).update(value).digest('hex');

function expectNoSecret(res: Response, ...values: string[]): void {
  for (const value of values) {
    expect(res.text).not.toContain(value);
    expect(res.text).not.toContain(hashOf(value));
  }
}

/** Each element is within `toleranceMs` of `expectedMs`. */
function expectTimeNear(iso: string | null, expectedMs: number, toleranceMs: number): void {
  expect(iso).toMatch(ISO_TIMESTAMP);
  expect(Math.abs(Date.parse(iso!) - expectedMs)).toBeLessThanOrEqual(toleranceMs);
}

async function createTeam(auth: Auth, name = 'Platform'): Promise<string> {
  const res = await t.http.post('/v1/teams').set(auth).send({ name });
  expectStatus(res, 201);
  expect(res.body.id).toMatch(/^team_/);
  return res.body.id;
}

async function createRole(
  auth: Auth,
  roleName: string,
  permissions: Record<string, string[]>,
): Promise<void> {
  const res = await t.http.post('/v1/roles').set(auth).send({ role_name: roleName, permissions });
  expectStatus(res, 201);
}

describe('creating a key', () => {
  let org: SignedUpOrganization;
  beforeAll(async () => {
    org = await signUpOrganization(t.http, 'Create');
  });

  it('answers 201 with the full key object and the value, once', async () => {
    const before = Date.now();
    const res = await t.http
      .post('/v1/api-keys')
      .set(org.auth)
      .send({ name: 'CI deploys', description: 'Used by CI', role: 'developer' });
    expectStatus(res, 201);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const created = res.body;
    expect(created.key).toMatch(KEY_VALUE);
    expect(created).toEqual({
      id: expect.stringMatching(KEY_ID),
      key: created.key,
      name: 'CI deploys',
      description: 'Used by CI',
      role: 'developer',
      permissions: expect.any(Array),
      type: 'personal',
      owner_id: org.userId,
      team_id: null,
      start: created.key.slice(0, 10),
      status: 'active',
      created_at: expect.stringMatching(ISO_TIMESTAMP),
      updated_at: expect.stringMatching(ISO_TIMESTAMP),
      expiration: null,
      last_used_at: null,
      last_rotated_at: null,
      previous_key_expires_at: null,
      previous_key_last_used_at: null,
      rotation_policy: { enabled: false, days: null, grace_period_seconds: 0, next_rotation_at: null },
      allowed_referrers: [],
      allowed_ips: [],
      rate_limit: { requests_per_minute: null, requests_per_hour: null },
      hide_credentials: false,
      enabled: true,
      meta: {},
      credits: null,
      last_used_ip: null,
      leaked_at: null,
      identity: null,
    });
    expect(sorted(created.permissions)).toEqual(DEVELOPER);
    expectTimeNear(created.created_at, before, 60_000);

    // The value works, and is never shown again: not by GET, list, PATCH, rotate or the audit log.
    await expectVerified(created.key);
    const fetched = await t.http.get(`/v1/api-keys/${created.id}`).set(org.auth);
    expectStatus(fetched, 200);
    const { key: _value, ...withoutValue } = created;
    expect(fetched.body).toEqual(withoutValue);
    expect(fetched.body).not.toHaveProperty('key');
    expectNoSecret(fetched, created.key);

    const listed = await t.http.get('/v1/api-keys').set(org.auth);
    expectStatus(listed, 200);
    expect(ids(listed)).toContain(created.id);
    for (const item of listed.body.data) expect(item).not.toHaveProperty('key');
    expectNoSecret(listed, created.key);

    const patched = await t.http.patch(`/v1/api-keys/${created.id}`).set(org.auth).send({ name: 'CI' });
    expectStatus(patched, 200);
    expect(patched.body).not.toHaveProperty('key');
    expectNoSecret(patched, created.key);

    const rotated = await t.http.post(`/v1/api-keys/${created.id}/rotate`).set(org.auth).send({});
    expectStatus(rotated, 200);
    expectNoSecret(rotated, created.key);
    const afterRotation = await t.http.get(`/v1/api-keys/${created.id}`).set(org.auth);
    expectNoSecret(afterRotation, created.key, rotated.body.key);

    const audit = await auditLog(org.auth, created.id);
    expect(audit.body.data.map((entry: Json) => entry.action)).toEqual(
      expect.arrayContaining(['key.created', 'key.updated', 'key.rotated']),
    );
    for (const entry of audit.body.data) {
      expect(entry).toEqual(
        expect.objectContaining({
          id: expect.any(String),
          action: expect.any(String),
          actor: { type: 'user', id: org.userId },
          created_at: expect.stringMatching(ISO_TIMESTAMP),
          details: expect.any(Object),
        }),
      );
    }
    expectNoSecret(audit, created.key, rotated.body.key);
    const organizationAudit = await t.http.get('/v1/audit-log').query({ limit: '100' }).set(org.auth);
    expectStatus(organizationAudit, 200);
    expect(organizationAudit.body.data.length).toBeGreaterThan(0);
    expectNoSecret(organizationAudit, created.key, rotated.body.key);
  });

  it('creates a team key for a team of the organization', async () => {
    const teamId = await createTeam(org.auth);
    const created = await createKey(org.auth, {
      name: 'team key',
      role: 'viewer',
      type: 'team',
      team_id: teamId,
    });
    expect(created).toMatchObject({ type: 'team', team_id: teamId, owner_id: org.userId, status: 'active' });
    expect(sorted(created.permissions)).toEqual(VIEWER);
    expect((await getKey(org.auth, created.id)).team_id).toBe(teamId);
    await expectVerified(created.key);
  });

  it('refuses a team key without team_id, or with a team of another organization', async () => {
    const other = await signUpOrganization(t.http, 'Other');
    const foreignTeam = await createTeam(other.auth, 'Foreign');
    const before = await listIds(org.auth);

    const missing = await t.http
      .post('/v1/api-keys')
      .set(org.auth)
      .send({ name: 'x', role: 'viewer', type: 'team' });
    expectFieldError(missing, 'team_id');

    const foreign = await t.http
      .post('/v1/api-keys')
      .set(org.auth)
      .send({ name: 'x', role: 'viewer', type: 'team', team_id: foreignTeam });
    expectFieldError(foreign, 'team_id', 'unknown_team');

    expect(await listIds(org.auth)).toEqual(before);
  });

  it('creates a service key, owned by its creator and bound to no team', async () => {
    const created = await createKey(org.auth, { name: 'svc', role: 'developer', type: 'service' });
    expect(created).toMatchObject({
      type: 'service',
      owner_id: org.userId,
      team_id: null,
      role: 'developer',
    });
    expect(sorted(created.permissions)).toEqual(DEVELOPER);
    await expectVerified(created.key);
  });

  it('schedules the next rotation of an enabled rotation policy', async () => {
    const before = Date.now();
    const created = await createKey(org.auth, {
      name: 'rotating',
      role: 'viewer',
      rotation_policy: { enabled: true, days: 30, grace_period_seconds: 3600 },
    });
    expect(created.rotation_policy).toEqual({
      enabled: true,
      days: 30,
      grace_period_seconds: 3600,
      next_rotation_at: expect.stringMatching(ISO_TIMESTAMP),
    });
    expectTimeNear(created.rotation_policy.next_rotation_at, before + 30 * DAY_MS, 60_000);
    expect((await getKey(org.auth, created.id)).rotation_policy).toEqual(created.rotation_policy);
  });

  it('keeps every optional setting it is given', async () => {
    const expiration = new Date(Date.now() + DAY_MS).toISOString();
    const created = await createKey(org.auth, {
      name: 'n'.repeat(100),
      description: 'd'.repeat(500),
      role: 'viewer',
      expiration,
      allowed_referrers: ['https://app.example.com/*', 'http://localhost:3000/callback'],
      allowed_ips: ['127.0.0.1', '10.0.0.0/8', '::1', '2001:db8::/32'],
      rate_limit: { requests_per_minute: 60, requests_per_hour: 1000 },
      hide_credentials: true,
    });
    expect(created).toMatchObject({
      name: 'n'.repeat(100),
      description: 'd'.repeat(500),
      expiration,
      allowed_referrers: ['https://app.example.com/*', 'http://localhost:3000/callback'],
      allowed_ips: ['127.0.0.1', '10.0.0.0/8', '::1', '2001:db8::/32'],
      rate_limit: { requests_per_minute: 60, requests_per_hour: 1000 },
      hide_credentials: true,
    });
    const { key: _value, ...withoutValue } = created;
    expect(await getKey(org.auth, created.id)).toEqual(withoutValue);
  });
});

type BadBodyCase = [label: string, body: () => Json, field: string, code?: string];

/** Every row gets all four values: jest.each would otherwise pass `done` as the missing argument. */
const withDefaultCode = ([label, body, field, code]: BadBodyCase): [string, () => Json, string, string] => [
  label,
  body,
  field,
  code ?? 'validation_failed',
];

describe('refusing bad bodies', () => {
  let org: SignedUpOrganization;
  let existing: Json;
  const inAnHour = (): string => new Date(Date.now() + 3_600_000).toISOString();

  beforeAll(async () => {
    org = await signUpOrganization(t.http, 'Validation');
    existing = await createKey(org.auth, { name: 'baseline', role: 'viewer' });
  });

  const createCases: BadBodyCase[] = [
    ['a missing name', () => ({ role: 'viewer' }), 'name'],
    ['an empty name', () => ({ name: '', role: 'viewer' }), 'name'],
    ['a name of 101 characters', () => ({ name: 'n'.repeat(101), role: 'viewer' }), 'name'],
    ['a non-string name', () => ({ name: 42, role: 'viewer' }), 'name'],
    ['a missing role', () => ({ name: 'k' }), 'role'],
    ['an unknown role', () => ({ name: 'k', role: 'no_such_role' }), 'role', 'unknown_role'],
    ['an unknown type', () => ({ name: 'k', role: 'viewer', type: 'robot' }), 'type'],
    [
      'a description of 501 characters',
      () => ({ name: 'k', role: 'viewer', description: 'd'.repeat(501) }),
      'description',
    ],
    [
      'an expiration that is not a timestamp',
      () => ({ name: 'k', role: 'viewer', expiration: 'tomorrow' }),
      'expiration',
    ],
    [
      'an expiration in the past',
      () => ({ name: 'k', role: 'viewer', expiration: '2020-01-01T00:00:00Z' }),
      'expiration',
    ],
    [
      'a negative requests_per_minute',
      () => ({ name: 'k', role: 'viewer', rate_limit: { requests_per_minute: -1 } }),
      'rate_limit.requests_per_minute',
    ],
    [
      'a zero requests_per_minute',
      () => ({ name: 'k', role: 'viewer', rate_limit: { requests_per_minute: 0 } }),
      'rate_limit.requests_per_minute',
    ],
    [
      'a fractional requests_per_minute',
      () => ({ name: 'k', role: 'viewer', rate_limit: { requests_per_minute: 1.5 } }),
      'rate_limit.requests_per_minute',
    ],
    [
      'a fractional requests_per_hour',
      () => ({ name: 'k', role: 'viewer', rate_limit: { requests_per_hour: 99.9 } }),
      'rate_limit.requests_per_hour',
    ],
    [
      'a string requests_per_hour',
      () => ({ name: 'k', role: 'viewer', rate_limit: { requests_per_hour: '100' } }),
      'rate_limit.requests_per_hour',
    ],
    [
      'an unknown rate_limit field',
      () => ({ name: 'k', role: 'viewer', rate_limit: { requests_per_day: 5 } }),
      'rate_limit.requests_per_day',
    ],
    [
      'a rotation policy without days',
      () => ({ name: 'k', role: 'viewer', rotation_policy: { enabled: true } }),
      'rotation_policy.days',
    ],
    [
      'a CIDR prefix too long',
      () => ({ name: 'k', role: 'viewer', allowed_ips: ['10.0.0.0/33'] }),
      'allowed_ips',
    ],
    [
      'an entry that is not an IP',
      () => ({ name: 'k', role: 'viewer', allowed_ips: ['not-an-ip'] }),
      'allowed_ips',
    ],
    [
      'an ftp referrer',
      () => ({ name: 'k', role: 'viewer', allowed_referrers: ['ftp://x'] }),
      'allowed_referrers',
    ],
    [
      'a referrer without a scheme',
      () => ({ name: 'k', role: 'viewer', allowed_referrers: ['no-scheme'] }),
      'allowed_referrers',
    ],
    ['an unknown field', () => ({ name: 'k', role: 'viewer', colour: 'blue' }), 'colour'],
    [
      'a non-boolean hide_credentials',
      () => ({ name: 'k', role: 'viewer', hide_credentials: 'yes' }),
      'hide_credentials',
    ],
  ];

  it.each(createCases.map(withDefaultCode))(
    'create with %s → 400, nothing created',
    async (_label, body, field, code) => {
      const before = await listIds(org.auth);
      const res = await t.http.post('/v1/api-keys').set(org.auth).send(body());
      expectFieldError(res, field, code);
      expect(await listIds(org.auth)).toEqual(before);
    },
  );

  it('refuses malformed JSON with 400', async () => {
    const before = await listIds(org.auth);
    const res = await t.http
      .post('/v1/api-keys')
      .set(org.auth)
      .set('Content-Type', 'application/json')
      .send('{"name": "k", "role": ');
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(await listIds(org.auth)).toEqual(before);
  });

  const patchCases: BadBodyCase[] = [
    ['type', () => ({ type: 'service' }), 'type'],
    ['an unknown field', () => ({ colour: 'blue' }), 'colour'],
    ['an empty name', () => ({ name: '' }), 'name'],
    ['a name of 101 characters', () => ({ name: 'n'.repeat(101) }), 'name'],
    ['a description of 501 characters', () => ({ description: 'd'.repeat(501) }), 'description'],
    ['an unknown role', () => ({ role: 'no_such_role' }), 'role', 'unknown_role'],
    ['an expiration in the past', () => ({ expiration: '2020-01-01T00:00:00Z' }), 'expiration'],
    ['a bad CIDR', () => ({ allowed_ips: ['10.0.0.0/33'] }), 'allowed_ips'],
    ['a bad referrer', () => ({ allowed_referrers: ['ftp://x'] }), 'allowed_referrers'],
    [
      'a zero rate limit',
      () => ({ rate_limit: { requests_per_minute: 0 } }),
      'rate_limit.requests_per_minute',
    ],
  ];

  it.each(patchCases.map(withDefaultCode))(
    'PATCH with %s → 400, key unchanged',
    async (_label, body, field, code) => {
      const before = await getKey(org.auth, existing.id);
      const res = await t.http.patch(`/v1/api-keys/${existing.id}`).set(org.auth).send(body());
      expectFieldError(res, field, code);
      expect(await getKey(org.auth, existing.id)).toEqual(before);
    },
  );

  it('names the refused allowed_ips and allowed_referrers entries, so a person can find them', async () => {
    const ips = await t.http
      .patch(`/v1/api-keys/${existing.id}`)
      .set(org.auth)
      .send({ allowed_ips: ['10.0.0.1', '10.0.0.300', '2001:db8::1', 'office'] });
    expectFieldError(ips, 'allowed_ips');
    const ipError = ips.body.errors.find((error: Json) => error.field === 'allowed_ips');
    expect(ipError.message).toContain('"10.0.0.300", "office"');
    expect(ipError.message).not.toContain('10.0.0.1"');

    const many = Array.from({ length: 5 }, (_, i) => `bad-${i}`);
    const referrers = await t.http
      .patch(`/v1/api-keys/${existing.id}`)
      .set(org.auth)
      .send({ allowed_referrers: ['https://ok.example/*', ...many] });
    const referrerError = referrers.body.errors.find((error: Json) => error.field === 'allowed_referrers');
    expect(referrerError.message).toContain('"bad-0", "bad-1", "bad-2" and 2 more');
  });

  it('accepts a PATCH expiration in the future (control for the cases above)', async () => {
    const expiration = inAnHour();
    const res = await t.http.patch(`/v1/api-keys/${existing.id}`).set(org.auth).send({ expiration });
    expectStatus(res, 200);
    expect(res.body.expiration).toBe(expiration);
  });
});

describe('listing keys', () => {
  let org: SignedUpOrganization;
  let manager: CreatedUser;
  let teamId: string;
  const k: Record<string, Json> = {};

  beforeAll(async () => {
    org = await signUpOrganization(t.http, 'Lists');
    manager = await createUser(t.http, org, 'api_manager');
    teamId = await createTeam(org.auth);
    k.adminPersonal = await createKey(org.auth, { name: 'k1', role: 'viewer' });
    k.adminService = await createKey(org.auth, { name: 'k2', role: 'developer', type: 'service' });
    k.adminTeam = await createKey(org.auth, { name: 'k3', role: 'viewer', type: 'team', team_id: teamId });
    k.managerPersonal = await createKey(manager.auth, { name: 'k4', role: 'viewer' });
    k.managerService = await createKey(manager.auth, { name: 'k5', role: 'viewer', type: 'service' });
  });

  const newestFirst = (): string[] =>
    ['managerService', 'managerPersonal', 'adminTeam', 'adminService', 'adminPersonal'].map(
      (name) => k[name].id,
    );

  it('lists the organization keys newest first, as {data, next_cursor}', async () => {
    const res = await t.http.get('/v1/api-keys').set(org.auth);
    expectStatus(res, 200);
    expect(Object.keys(res.body).sort()).toEqual(['data', 'next_cursor']);
    expect(ids(res)).toEqual(newestFirst());
    expect(res.body.next_cursor).toBeNull();
  });

  it('pages with limit and cursor', async () => {
    const first = await t.http.get('/v1/api-keys').query({ limit: 2 }).set(org.auth);
    expectStatus(first, 200);
    expect(ids(first)).toEqual(newestFirst().slice(0, 2));
    expect(first.body.next_cursor).toEqual(expect.any(String));

    const second = await t.http
      .get('/v1/api-keys')
      .query({ limit: 2, cursor: first.body.next_cursor })
      .set(org.auth);
    expectStatus(second, 200);
    expect(ids(second)).toEqual(newestFirst().slice(2, 4));
    expect(second.body.next_cursor).toEqual(expect.any(String));

    const third = await t.http
      .get('/v1/api-keys')
      .query({ limit: 2, cursor: second.body.next_cursor })
      .set(org.auth);
    expectStatus(third, 200);
    expect(ids(third)).toEqual(newestFirst().slice(4));
    expect(third.body.next_cursor).toBeNull();
  });

  it.each([
    [{ limit: '0' }, 'limit'],
    [{ limit: '101' }, 'limit'],
    [{ limit: 'ten' }, 'limit'],
    [{ type: 'robot' }, 'type'],
    [{ status: 'sleeping' }, 'status'],
  ])('refuses the query %j with 400', async (query, field) => {
    expectFieldError(await t.http.get('/v1/api-keys').query(query).set(org.auth), field);
  });

  it('refuses a cursor it did not issue', async () => {
    const res = await t.http.get('/v1/api-keys').query({ cursor: 'not-a-cursor' }).set(org.auth);
    expectFieldError(res, 'cursor', 'invalid_cursor');
  });

  it('filters by type, owner_id and team_id', async () => {
    expect(await listIds(org.auth, { type: 'service' })).toEqual([k.managerService.id, k.adminService.id]);
    expect(await listIds(org.auth, { type: 'team' })).toEqual([k.adminTeam.id]);
    expect(await listIds(org.auth, { type: 'personal' })).toEqual([k.managerPersonal.id, k.adminPersonal.id]);
    expect(await listIds(org.auth, { owner_id: manager.id })).toEqual([
      k.managerService.id,
      k.managerPersonal.id,
    ]);
    expect(await listIds(org.auth, { owner_id: org.userId })).toEqual([
      k.adminTeam.id,
      k.adminService.id,
      k.adminPersonal.id,
    ]);
    expect(await listIds(org.auth, { team_id: teamId })).toEqual([k.adminTeam.id]);
    expect(await listIds(org.auth, { status: 'active' })).toEqual(newestFirst());
    expect(await listIds(org.auth, { status: 'revoked' })).toEqual([]);
    expect(await listIds(org.auth, { type: 'service', owner_id: manager.id })).toEqual([k.managerService.id]);
  });

  it('filters by status: revoked after the owner is deactivated, expired past the expiration', async () => {
    const deactivated = await t.http.post(`/v1/users/${manager.id}/deactivate`).set(org.auth);
    expectStatus(deactivated, 200);
    expect(await listIds(org.auth, { status: 'revoked' })).toEqual([k.managerPersonal.id]);

    const expiring = await createKey(org.auth, {
      name: 'short-lived',
      role: 'viewer',
      expiration: new Date(Date.now() + 3_000).toISOString(),
    });
    expect(await listIds(org.auth, { status: 'expired' })).toEqual([]);
    await sleepUntilPast(expiring.expiration);

    expect(await listIds(org.auth, { status: 'expired' })).toEqual([expiring.id]);
    expect(await listIds(org.auth, { status: 'revoked' })).toEqual([k.managerPersonal.id]);
    expect(await listIds(org.auth, { status: 'active' })).toEqual([
      k.managerService.id,
      k.adminTeam.id,
      k.adminService.id,
      k.adminPersonal.id,
    ]);
    const statuses = Object.fromEntries((await listAll(org.auth)).map((key) => [key.id, key.status]));
    expect(statuses[expiring.id]).toBe('expired');
    expect(statuses[k.managerPersonal.id]).toBe('revoked');
    expect(statuses[k.managerService.id]).toBe('active');
  });
});

describe('searching keys', () => {
  let org: SignedUpOrganization;
  let other: SignedUpOrganization;
  const k: Record<string, Json> = {};

  beforeAll(async () => {
    org = await signUpOrganization(t.http, 'Search');
    other = await signUpOrganization(t.http, 'Search elsewhere');
    k.billing = await createKey(org.auth, { name: 'Billing worker', role: 'viewer' });
    k.billingService = await createKey(org.auth, {
      name: 'nightly BILLING export',
      role: 'viewer',
      type: 'service',
    });
    k.percent = await createKey(org.auth, { name: '100% uptime probe', role: 'viewer' });
    k.underscore = await createKey(org.auth, { name: 'deploy_bot', role: 'viewer' });
    k.plain = await createKey(org.auth, { name: 'deploy-bot', role: 'viewer' });
    // Another organization's key with a matching name: never listed.
    await createKey(other.auth, { name: 'Billing worker', role: 'viewer' });
  });

  const search = (query: Record<string, string>) => listIds(org.auth, query);

  it('matches a part of the name, ignoring case, newest first', async () => {
    expect(await search({ search: 'billing' })).toEqual([k.billingService.id, k.billing.id]);
    expect(await search({ search: 'WORKER' })).toEqual([k.billing.id]);
    // Surrounding spaces are not part of the search.
    expect(await search({ search: '  worker ' })).toEqual([k.billing.id]);
    expect(await search({ search: 'no such key' })).toEqual([]);
  });

  it("matches the beginning of a key's start, ignoring case, and not its middle", async () => {
    const start: string = k.percent.start;
    expect(await search({ search: start })).toEqual([k.percent.id]);
    expect(await search({ search: start.slice(0, 8).toUpperCase() })).toContain(k.percent.id);
    // `sk_` begins every start: the whole organization matches.
    expect((await search({ search: 'sk_' })).sort()).toEqual(
      Object.values(k)
        .map((key) => key.id)
        .sort(),
    );
    // The end of a start is not its beginning (and no name holds it).
    expect(await search({ search: start.slice(4) })).not.toContain(k.percent.id);
  });

  it('takes % and _ literally, not as LIKE wildcards', async () => {
    expect(await search({ search: '100%' })).toEqual([k.percent.id]);
    expect(await search({ search: '%' })).toEqual([k.percent.id]);
    expect(await search({ search: 'deploy_' })).toEqual([k.underscore.id]);
    expect(await search({ search: '_' })).toEqual([k.underscore.id]);
    expect(await search({ search: '\\' })).toEqual([]);
  });

  it('combines with the other filters', async () => {
    expect(await search({ search: 'billing', type: 'service' })).toEqual([k.billingService.id]);
    expect(await search({ search: 'billing', type: 'personal' })).toEqual([k.billing.id]);
    expect(await search({ search: 'billing', owner_id: org.userId, status: 'active' })).toEqual([
      k.billingService.id,
      k.billing.id,
    ]);
    expect(await search({ search: 'deploy', status: 'revoked' })).toEqual([]);
  });

  it('pages through the matches with limit and cursor', async () => {
    const first = await t.http.get('/v1/api-keys').query({ search: 'deploy', limit: 1 }).set(org.auth);
    expectStatus(first, 200);
    expect(ids(first)).toEqual([k.plain.id]);
    expect(first.body.next_cursor).toEqual(expect.any(String));
    const second = await t.http
      .get('/v1/api-keys')
      .query({ search: 'deploy', limit: 1, cursor: first.body.next_cursor })
      .set(org.auth);
    expectStatus(second, 200);
    expect(ids(second)).toEqual([k.underscore.id]);
    expect(second.body.next_cursor).toBeNull();
  });

  it('treats an empty search as no filter', async () => {
    expect((await search({ search: '' })).length).toBe(Object.keys(k).length);
    expect((await search({ search: '   ' })).length).toBe(Object.keys(k).length);
  });

  it.each([
    ['longer than 100 characters', 'x'.repeat(101)],
    ['with a NUL character', 'bill\u0000ing'],
    ['with a line break', 'bill\ning'],
  ])('refuses a search %s with 400 naming search', async (_what, value) => {
    expectFieldError(await t.http.get('/v1/api-keys').query({ search: value }).set(org.auth), 'search');
  });

  it('refuses the search given twice with 400 naming search', async () => {
    expectFieldError(await t.http.get('/v1/api-keys?search=a&search=b').set(org.auth), 'search');
  });

  it('accepts a search of exactly 100 characters', async () => {
    expect(await search({ search: 'x'.repeat(100) })).toEqual([]);
  });
});

describe('the defaults a key without limits gets', () => {
  it('answers the configured per-minute and per-hour limits and the concurrency limit', async () => {
    const org = await signUpOrganization(t.http, 'Defaults');
    const res = await t.http.get('/v1/api-keys/defaults').set(org.auth);
    expectStatus(res, 200);
    expect(res.body).toEqual({
      rate_limit: {
        requests_per_minute: t.config.DEFAULT_REQUESTS_PER_MINUTE,
        requests_per_hour: t.config.DEFAULT_REQUESTS_PER_HOUR,
      },
      max_concurrent_requests: t.config.MAX_CONCURRENT_REQUESTS_PER_KEY,
    });
    // Readers of keys may read them; others may not.
    const viewer = await createUser(t.http, org, 'viewer');
    expectProblem(await t.http.get('/v1/api-keys/defaults').set(viewer.auth), 403, 'forbidden');
  });
});

describe("a key's audit log by action", () => {
  it('lists only the actions asked for, and refuses an unknown one', async () => {
    const org = await signUpOrganization(t.http, 'Audit filter');
    const key = await createKey(org.auth, { name: 'filtered', role: 'viewer' });
    expectStatus(await t.http.patch(`/v1/api-keys/${key.id}`).set(org.auth).send({ enabled: false }), 200);
    const res = await t.http
      .get(`/v1/api-keys/${key.id}/audit-log`)
      .query({ action: 'key.disabled' })
      .set(org.auth);
    expectStatus(res, 200);
    expect(res.body.data.map((entry: Json) => entry.action)).toEqual(['key.disabled']);
    expect((await auditLog(org.auth, key.id)).body.data.map((entry: Json) => entry.action)).toEqual(
      expect.arrayContaining(['key.created', 'key.disabled']),
    );
    expectFieldError(
      await t.http.get(`/v1/api-keys/${key.id}/audit-log`).query({ action: 'key.nonsense' }).set(org.auth),
      'action',
    );
  });
});

describe('reading and changing a key', () => {
  let org: SignedUpOrganization;
  beforeAll(async () => {
    org = await signUpOrganization(t.http, 'Patch');
  });

  it('PATCH changes name, description, role, allowed_ips, rate_limit and clears expiration', async () => {
    const created = await createKey(org.auth, {
      name: 'before',
      description: 'old',
      role: 'developer',
      expiration: new Date(Date.now() + DAY_MS).toISOString(),
    });
    const res = await t.http
      .patch(`/v1/api-keys/${created.id}`)
      .set(org.auth)
      .send({
        name: 'after',
        description: 'new',
        role: 'viewer',
        allowed_ips: ['192.0.2.0/24', '2001:db8::1'],
        rate_limit: { requests_per_minute: 30, requests_per_hour: 500 },
        expiration: null,
      });
    expectStatus(res, 200);
    expect(res.body).toMatchObject({
      id: created.id,
      name: 'after',
      description: 'new',
      role: 'viewer',
      type: 'personal',
      allowed_ips: ['192.0.2.0/24', '2001:db8::1'],
      rate_limit: { requests_per_minute: 30, requests_per_hour: 500 },
      expiration: null,
      start: created.start,
      created_at: created.created_at,
    });
    expect(sorted(res.body.permissions)).toEqual(VIEWER);
    expect(Date.parse(res.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.updated_at));
    expect(await getKey(org.auth, created.id)).toEqual(res.body);

    // Null clears; absent leaves alone.
    const cleared = await t.http
      .patch(`/v1/api-keys/${created.id}`)
      .set(org.auth)
      .send({ description: null, rate_limit: null });
    expectStatus(cleared, 200);
    expect(cleared.body).toMatchObject({
      name: 'after',
      description: null,
      rate_limit: { requests_per_minute: null, requests_per_hour: null },
      allowed_ips: ['192.0.2.0/24', '2001:db8::1'],
    });

    const audit = await auditLog(org.auth, created.id);
    const updates = audit.body.data.filter((entry: Json) => entry.action === 'key.updated');
    expect(updates).toHaveLength(2);
    // Newest first.
    expect(updates[0].details.fields).toEqual(['description', 'rate_limit']);
    expect(updates[1].details.fields).toEqual(
      expect.arrayContaining(['allowed_ips', 'description', 'expiration', 'name', 'rate_limit', 'role']),
    );
  });

  it('a role change applies at the very next request of that key', async () => {
    const created = await createKey(org.auth, { name: 'dev', role: 'developer' });
    const asDeveloper = await expectVerified(created.key);
    expect(asDeveloper).toEqual({
      valid: true,
      key_id: created.id,
      name: 'dev',
      role: 'developer',
      permissions: expect.any(Array),
      expires_at: null,
      meta: {},
      identity: null,
      credits_remaining: null,
    });
    expect(sorted(asDeveloper.permissions)).toEqual(DEVELOPER);

    expectStatus(
      await t.http.patch(`/v1/api-keys/${created.id}`).set(org.auth).send({ role: 'viewer' }),
      200,
    );
    const asViewer = await expectVerified(created.key);
    expect(asViewer.role).toBe('viewer');
    expect(sorted(asViewer.permissions)).toEqual(VIEWER);

    expectStatus(
      await t.http.patch(`/v1/api-keys/${created.id}`).set(org.auth).send({ role: 'api_manager' }),
      200,
    );
    const asManager = await expectVerified(created.key);
    expect(asManager.role).toBe('api_manager');
    expect(asManager.permissions).toContain('api_keys:create');
    // And the new role's permissions are usable at once.
    expectStatus(await t.http.get('/v1/api-keys').set(bearer(created.key)), 200);
  });

  it('answers 404 for an id that is not a key', async () => {
    for (const id of ['key_0000000000000000000000', 'nonsense', 'usr_0000000000000000000000']) {
      expectProblem(await t.http.get(`/v1/api-keys/${id}`).set(org.auth), 404, 'not_found');
    }
    expectProblem(
      await t.http.patch('/v1/api-keys/key_0000000000000000000000').set(org.auth).send({ name: 'x' }),
      404,
      'not_found',
    );
  });
});

describe('presenting a key', () => {
  let org: SignedUpOrganization;
  let created: Json;
  let other: Json;
  beforeAll(async () => {
    org = await signUpOrganization(t.http, 'Present');
    created = await createKey(org.auth, { name: 'presented', role: 'viewer' });
    other = await createKey(org.auth, { name: 'other', role: 'viewer' });
  });

  const expectVerifyBody = (res: Response): void => {
    expectStatus(res, 200);
    expect(res.body).toEqual({
      valid: true,
      key_id: created.id,
      name: 'presented',
      role: 'viewer',
      permissions: expect.any(Array),
      expires_at: null,
      meta: {},
      identity: null,
      credits_remaining: null,
    });
    expect(sorted(res.body.permissions)).toEqual(VIEWER);
  };

  it('accepts Authorization: Bearer', async () => {
    expectVerifyBody(await t.http.get('/v1/auth/verify').set('Authorization', `Bearer ${created.key}`));
  });

  it('accepts X-API-Key', async () => {
    expectVerifyBody(await t.http.get('/v1/auth/verify').set('X-API-Key', created.key));
  });

  it('accepts ?api_key', async () => {
    expectVerifyBody(await t.http.get('/v1/auth/verify').query({ api_key: created.key }));
  });

  it('accepts the same key sent twice', async () => {
    expectVerifyBody(
      await t.http
        .get('/v1/auth/verify')
        .set('Authorization', `Bearer ${created.key}`)
        .set('X-API-Key', created.key),
    );
    expectVerifyBody(
      await t.http.get('/v1/auth/verify').set('X-API-Key', created.key).query({ api_key: created.key }),
    );
  });

  it('refuses two different credentials with 401 ambiguous_credentials', async () => {
    expectProblem(
      await t.http
        .get('/v1/auth/verify')
        .set('Authorization', `Bearer ${created.key}`)
        .set('X-API-Key', other.key),
      401,
      'ambiguous_credentials',
    );
    expectProblem(
      await t.http.get('/v1/auth/verify').set('X-API-Key', created.key).query({ api_key: other.key }),
      401,
      'ambiguous_credentials',
    );
    expectProblem(
      await t.http.get('/v1/api-keys').set(org.auth).set('X-API-Key', created.key),
      401,
      'ambiguous_credentials',
    );
  });

  it('shows expires_at for a key that expires', async () => {
    const expiration = new Date(Date.now() + DAY_MS).toISOString();
    const expiring = await createKey(org.auth, { name: 'expiring', role: 'viewer', expiration });
    expect((await expectVerified(expiring.key)).expires_at).toBe(expiration);
  });

  it('refuses no credential with 401 missing_credentials', async () => {
    expectProblem(await t.http.get('/v1/auth/verify'), 401, 'missing_credentials');
  });

  it('refuses an access token on verify with 401 api_key_required', async () => {
    expectProblem(await t.http.get('/v1/auth/verify').set(org.auth), 401, 'api_key_required');
  });

  describe('with ALLOW_QUERY_API_KEY=false', () => {
    let t2: TestApp;
    let key: string;
    beforeAll(async () => {
      t2 = await startTestApp({ env: { ALLOW_QUERY_API_KEY: 'false' } });
      const admin = await signUpOrganization(t2.http, 'NoQuery');
      const res = await t2.http.post('/v1/api-keys').set(admin.auth).send({ name: 'q', role: 'viewer' });
      expectStatus(res, 201);
      key = res.body.key;
    });
    afterAll(() => t2?.close());

    it('ignores ?api_key: a request carrying only it has no credential', async () => {
      expectProblem(await t2.http.get('/v1/auth/verify').query({ api_key: key }), 401, 'missing_credentials');
    });

    it('still accepts the headers', async () => {
      expectStatus(await t2.http.get('/v1/auth/verify').set('X-API-Key', key), 200);
      expectStatus(await t2.http.get('/v1/auth/verify').set(bearer(key)), 200);
    });
  });
});

describe('refusing a key', () => {
  let org: SignedUpOrganization;
  beforeAll(async () => {
    org = await signUpOrganization(t.http, 'Refuse');
  });

  it('refuses a value of the wrong shape with 401 malformed_key', async () => {
    const created = await createKey(org.auth, { name: 'shape', role: 'viewer' });
    for (const value of ['sk_short', 'hello', `${created.key}x`, created.key.replace(/^sk_/, 'pk_')]) {
      expectProblem(await verify(value), 401, 'malformed_key');
      expectProblem(await t.http.get('/v1/auth/verify').set('X-API-Key', value), 401, 'malformed_key');
    }
  });

  it('refuses a value with one character changed (bad checksum) with 401 malformed_key', async () => {
    const created = await createKey(org.auth, { name: 'checksum', role: 'viewer' });
    const value: string = created.key;
    const at = 10;
    const changed = value.slice(0, at) + (value[at] === 'a' ? 'b' : 'a') + value.slice(at + 1);
    expect(changed).not.toBe(value);
    expect(changed).toMatch(KEY_VALUE);
    expectProblem(await verify(changed), 401, 'malformed_key');
    // The last character (inside the checksum) too.
    const last = value.length - 1;
    const changedChecksum = value.slice(0, last) + (value[last] === 'Z' ? 'Y' : 'Z');
    expectProblem(await verify(changedChecksum), 401, 'malformed_key');
    await expectVerified(value);
  });

  it('refuses a well-formed but unknown value with 401 invalid_credentials', async () => {
    const unknown = new ApiKeyFormat('sk').generate();
    expect(unknown).toMatch(KEY_VALUE);
    expectProblem(await verify(unknown), 401, 'invalid_credentials');
    // Twice: a remembered miss answers the same.
    expectProblem(await verify(unknown), 401, 'invalid_credentials');
  });

  it('refuses an expired key with 401 key_expired and shows it as expired', async () => {
    const expiration = new Date(Date.now() + 3_000).toISOString();
    const created = await createKey(org.auth, { name: 'expiring', role: 'viewer', expiration });
    expect(created.status).toBe('active');
    expect((await expectVerified(created.key)).expires_at).toBe(expiration);

    await sleepUntilPast(expiration);
    expectProblem(await verify(created.key), 401, 'key_expired');
    const shown = await getKey(org.auth, created.id);
    expect(shown).toMatchObject({ status: 'expired', expiration });

    // An expired key can be neither rotated nor brought back by a rotation.
    expectProblem(
      await t.http.post(`/v1/api-keys/${created.id}/rotate`).set(org.auth).send({}),
      409,
      'key_not_active',
    );
  });

  it('refuses a deleted key (401) and answers 404 for it', async () => {
    const created = await createKey(org.auth, { name: 'doomed', role: 'viewer' });
    await expectVerified(created.key);
    const deleted = await t.http.delete(`/v1/api-keys/${created.id}`).set(org.auth);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');

    expectProblem(await verify(created.key), 401, 'invalid_credentials');
    expectProblem(await t.http.get(`/v1/api-keys/${created.id}`).set(org.auth), 404, 'not_found');
    expectProblem(
      await t.http.patch(`/v1/api-keys/${created.id}`).set(org.auth).send({ name: 'x' }),
      404,
      'not_found',
    );
    expectProblem(
      await t.http.post(`/v1/api-keys/${created.id}/rotate`).set(org.auth).send({}),
      404,
      'not_found',
    );
    expectProblem(await t.http.delete(`/v1/api-keys/${created.id}`).set(org.auth), 404, 'not_found');
    expectProblem(await t.http.get(`/v1/api-keys/${created.id}/audit-log`).set(org.auth), 404, 'not_found');
    // The organization's audit log keeps the deletion, without the value.
    const audit = await t.http.get('/v1/audit-log').query({ key_id: created.id, limit: '100' }).set(org.auth);
    expectStatus(audit, 200);
    expect(audit.body.data.map((entry: Json) => entry.action)).toEqual(
      expect.arrayContaining(['key.created', 'key.deleted']),
    );
    expectNoSecret(audit, created.key);
    expect(await listIds(org.auth)).not.toContain(created.id);
  });

  it('after a rotation without grace, refuses the old value at once (401 key_revoked) and accepts the new', async () => {
    const created = await createKey(org.auth, { name: 'rotated', role: 'viewer' });
    await expectVerified(created.key);
    const rotated = await t.http.post(`/v1/api-keys/${created.id}/rotate`).set(org.auth).send({});
    expectStatus(rotated, 200);
    expect(rotated.body.previous_key_expires_at).toBeNull();

    expectProblem(await verify(created.key), 401, 'key_revoked');
    expect((await expectVerified(rotated.body.key)).key_id).toBe(created.id);
  });

  it('after a rotation with a grace period, accepts the old value until it ends, then refuses it', async () => {
    const created = await createKey(org.auth, { name: 'graceful', role: 'viewer' });
    const sentAt = Date.now();
    const rotated = await t.http
      .post(`/v1/api-keys/${created.id}/rotate`)
      .set(org.auth)
      .send({ grace_period_seconds: 4 });
    const answeredAt = Date.now();
    expectStatus(rotated, 200);
    const graceEnds: string = rotated.body.previous_key_expires_at;
    // 4 s after the rotation, which happened between the request and its answer (however long that took
    // on a loaded machine), give or take the stored timestamp's rounding.
    expect(graceEnds).toMatch(ISO_TIMESTAMP);
    expect(Date.parse(graceEnds)).toBeGreaterThanOrEqual(sentAt + 4_000 - 1_000);
    expect(Date.parse(graceEnds)).toBeLessThanOrEqual(answeredAt + 4_000 + 1_000);
    expect(rotated.body.previous_key_last_used_at).toBeNull();

    // Both values work during the grace period.
    expect((await expectVerified(created.key)).key_id).toBe(created.id);
    expect((await expectVerified(rotated.body.key)).key_id).toBe(created.id);

    // The use of the old value is recorded (about a second later), so an operator sees who still uses it.
    const shown = await pollUntil(
      () => getKey(org.auth, created.id),
      (key) => key.previous_key_last_used_at !== null || Date.now() > Date.parse(graceEnds) - 300,
      5_000,
    );
    expect(shown.previous_key_expires_at).toBe(graceEnds);
    expect(shown.previous_key_last_used_at).toMatch(ISO_TIMESTAMP);

    await sleepUntilPast(graceEnds);
    expectProblem(await verify(created.key), 401, 'key_revoked');
    await expectVerified(rotated.body.key);
    const after = await getKey(org.auth, created.id);
    expect(after).toMatchObject({
      status: 'active',
      previous_key_expires_at: null,
      previous_key_last_used_at: null,
    });
  });

  it("on the owner's deactivation revokes the personal key only; reactivation does not restore it", async () => {
    const owner = await createUser(t.http, org, 'api_manager');
    const teamId = await createTeam(org.auth, 'Owners');
    const personal = await createKey(owner.auth, { name: 'mine', role: 'viewer' });
    const team = await createKey(owner.auth, { name: 'ours', role: 'viewer', type: 'team', team_id: teamId });
    const service = await createKey(owner.auth, { name: 'robot', role: 'viewer', type: 'service' });
    for (const key of [personal, team, service]) await expectVerified(key.key);

    expectStatus(await t.http.post(`/v1/users/${owner.id}/deactivate`).set(org.auth), 200);

    expectProblem(await verify(personal.key), 401, 'key_revoked');
    expect(await getKey(org.auth, personal.id)).toMatchObject({ status: 'revoked', permissions: [] });
    expect((await expectVerified(team.key)).key_id).toBe(team.id);
    expect((await expectVerified(service.key)).key_id).toBe(service.id);
    expect((await getKey(org.auth, team.id)).status).toBe('active');
    expect((await getKey(org.auth, service.id)).status).toBe('active');

    const audit = await auditLog(org.auth, personal.id);
    const revoked = audit.body.data.filter((entry: Json) => entry.action === 'key.revoked');
    expect(revoked).toHaveLength(1);
    expect(revoked[0]).toMatchObject({
      actor: { type: 'user', id: org.userId },
      details: expect.objectContaining({ reason: 'owner_deactivated' }),
    });

    // A revoked key can be neither rotated nor changed.
    expectProblem(
      await t.http.post(`/v1/api-keys/${personal.id}/rotate`).set(org.auth).send({}),
      409,
      'key_not_active',
    );

    expectStatus(await t.http.post(`/v1/users/${owner.id}/activate`).set(org.auth), 200);
    expectProblem(await verify(personal.key), 401, 'key_revoked');
    expect((await getKey(org.auth, personal.id)).status).toBe('revoked');
    await expectVerified(team.key);
  });

  it('refuses a key lacking the permission with 403 forbidden', async () => {
    const viewer = await createKey(org.auth, { name: 'viewer', role: 'viewer' });
    const before = await listIds(org.auth);
    const res = await t.http.post('/v1/api-keys').set(bearer(viewer.key)).send({ name: 'x', role: 'viewer' });
    expectProblem(res, 403, 'forbidden');
    expectProblem(await t.http.get('/v1/api-keys').set(bearer(viewer.key)), 403, 'forbidden');
    expect(await listIds(org.auth)).toEqual(before);
  });
});

describe('permissions', () => {
  let org: SignedUpOrganization;
  beforeAll(async () => {
    org = await signUpOrganization(t.http, 'Perms');
  });

  it("narrows a personal key to its owner's current permissions", async () => {
    // Developers may not manage keys, so the owner holds developer rights plus key management.
    const devPlusKeys = {
      ...mapFromPermissions(builtInRolePermissions('developer')),
      api_keys: ['create', 'read'],
    };
    await createRole(org.auth, 'developer_keys', devPlusKeys);
    const owner = await createUser(t.http, org, 'developer_keys');
    const key = await createKey(owner.auth, { name: 'dev key', role: 'developer_keys' });
    const ownerPermissions = sorted([...DEVELOPER, 'api_keys:create', 'api_keys:read']);
    expect(sorted(key.permissions)).toEqual(ownerPermissions);
    expect(sorted((await expectVerified(key.key)).permissions)).toEqual(ownerPermissions);
    expectStatus(await t.http.get('/v1/api-keys').set(bearer(key.key)), 200);

    expectStatus(await t.http.patch(`/v1/users/${owner.id}`).set(org.auth).send({ role: 'viewer' }), 200);

    const narrowed = await expectVerified(key.key);
    expect(narrowed.role).toBe('developer_keys');
    expect(sorted(narrowed.permissions)).toEqual(VIEWER);
    expectProblem(await t.http.get('/v1/api-keys').set(bearer(key.key)), 403, 'forbidden');
    expect(sorted((await getKey(org.auth, key.id)).permissions)).toEqual(VIEWER);

    // Restoring the owner restores the key.
    expectStatus(
      await t.http.patch(`/v1/users/${owner.id}`).set(org.auth).send({ role: 'developer_keys' }),
      200,
    );
    expect(sorted((await expectVerified(key.key)).permissions)).toEqual(ownerPermissions);
  });

  it('lets an api_manager key create a viewer key but not an administrator key', async () => {
    const managerKey = await createKey(org.auth, { name: 'manager', role: 'api_manager' });
    const child = await t.http
      .post('/v1/api-keys')
      .set(bearer(managerKey.key))
      .send({ name: 'child', role: 'viewer' });
    expectStatus(child, 201);
    expect(child.body).toMatchObject({ role: 'viewer', type: 'personal', owner_id: org.userId });
    await expectVerified(child.body.key);
    const audit = await auditLog(org.auth, child.body.id);
    expect(audit.body.data[0]).toMatchObject({
      action: 'key.created',
      actor: { type: 'api_key', id: managerKey.id },
    });

    const before = await listIds(org.auth);
    for (const role of ['administrator', 'developer']) {
      const res = await t.http
        .post('/v1/api-keys')
        .set(bearer(managerKey.key))
        .send({ name: 'too much', role });
      expectProblem(res, 403, 'privilege_escalation');
    }
    // Nor raise the key it made.
    expectProblem(
      await t.http
        .patch(`/v1/api-keys/${child.body.id}`)
        .set(bearer(managerKey.key))
        .send({ role: 'administrator' }),
      403,
      'privilege_escalation',
    );
    expect(await listIds(org.auth)).toEqual(before);
    expect((await getKey(org.auth, child.body.id)).role).toBe('viewer');
  });

  it('refuses key creation to a developer user (403)', async () => {
    const developer = await createUser(t.http, org, 'developer');
    const before = await listIds(org.auth);
    const res = await t.http.post('/v1/api-keys').set(developer.auth).send({ name: 'x', role: 'viewer' });
    expectProblem(res, 403, 'forbidden');
    expect(await listIds(org.auth)).toEqual(before);
  });

  it('refuses an api_manager user acting on an administrator key (403)', async () => {
    const adminKey = await createKey(org.auth, { name: 'root', role: 'administrator' });
    const manager = await createUser(t.http, org, 'api_manager');
    // Reading is within api_keys:read.
    expect((await getKey(manager.auth, adminKey.id)).role).toBe('administrator');

    expectProblem(
      await t.http.post(`/v1/api-keys/${adminKey.id}/rotate`).set(manager.auth).send({}),
      403,
      'privilege_escalation',
    );
    expectProblem(
      await t.http.delete(`/v1/api-keys/${adminKey.id}`).set(manager.auth),
      403,
      'privilege_escalation',
    );
    expectProblem(
      await t.http.patch(`/v1/api-keys/${adminKey.id}`).set(manager.auth).send({ name: 'mine now' }),
      403,
      'privilege_escalation',
    );
    const unchanged = await getKey(org.auth, adminKey.id);
    expect(unchanged).toMatchObject({
      name: 'root',
      status: 'active',
      last_rotated_at: null,
      start: adminKey.start,
    });
    expect((await expectVerified(adminKey.key)).role).toBe('administrator');
  });
});

describe('rotating a key', () => {
  let org: SignedUpOrganization;
  beforeAll(async () => {
    org = await signUpOrganization(t.http, 'Rotate');
  });

  it('answers 200 with the key object, a new value and last_rotated_at', async () => {
    const created = await createKey(org.auth, { name: 'rotate me', role: 'developer' });
    const before = Date.now();
    const res = await t.http.post(`/v1/api-keys/${created.id}/rotate`).set(org.auth).send({});
    expectStatus(res, 200);
    expect(res.body.key).toMatch(KEY_VALUE);
    expect(res.body.key).not.toBe(created.key);
    expect(res.body).toMatchObject({
      id: created.id,
      name: 'rotate me',
      role: 'developer',
      status: 'active',
      start: res.body.key.slice(0, 10),
      created_at: created.created_at,
      previous_key_expires_at: null,
    });
    expectTimeNear(res.body.last_rotated_at, before, 60_000);
    const { key: _value, ...withoutValue } = res.body;
    expect(await getKey(org.auth, created.id)).toEqual(withoutValue);

    const audit = await auditLog(org.auth, created.id);
    expect(audit.body.data[0]).toMatchObject({
      action: 'key.rotated',
      actor: { type: 'user', id: org.userId },
      details: expect.objectContaining({ grace_period_seconds: 0, previous_key_expires_at: null }),
    });
  });

  it('accepts the longest grace period, 604800 seconds', async () => {
    const created = await createKey(org.auth, { name: 'long grace', role: 'viewer' });
    const before = Date.now();
    const res = await t.http
      .post(`/v1/api-keys/${created.id}/rotate`)
      .set(org.auth)
      .send({ grace_period_seconds: 604800 });
    expectStatus(res, 200);
    expectTimeNear(res.body.previous_key_expires_at, before + 604_800_000, 60_000);
    await expectVerified(created.key);
    await expectVerified(res.body.key);
  });

  it.each([[-1], [604801], [1.5], ['60']])('refuses grace_period_seconds %j with 400', async (grace) => {
    const created = await createKey(org.auth, { name: 'bad grace', role: 'viewer' });
    const res = await t.http
      .post(`/v1/api-keys/${created.id}/rotate`)
      .set(org.auth)
      .send({ grace_period_seconds: grace });
    expectFieldError(res, 'grace_period_seconds');
    // Nothing rotated: the value still works and no rotation is recorded.
    await expectVerified(created.key);
    expect((await getKey(org.auth, created.id)).last_rotated_at).toBeNull();
  });

  it('refuses to rotate a revoked key with 409', async () => {
    const owner = await createUser(t.http, org, 'api_manager');
    const key = await createKey(owner.auth, { name: 'to revoke', role: 'viewer' });
    expectStatus(await t.http.post(`/v1/users/${owner.id}/deactivate`).set(org.auth), 200);
    const res = await t.http.post(`/v1/api-keys/${key.id}/rotate`).set(org.auth).send({});
    expectProblem(res, 409, 'key_not_active');
    expectProblem(await verify(key.key), 401, 'key_revoked');
  });
});

describe('organization isolation', () => {
  let a: SignedUpOrganization;
  let b: SignedUpOrganization;
  let aKey: Json;
  let aManagerKey: Json;
  let bKey: Json;

  beforeAll(async () => {
    a = await signUpOrganization(t.http, 'A');
    b = await signUpOrganization(t.http, 'B');
    aKey = await createKey(a.auth, { name: 'A key', role: 'viewer' });
    aManagerKey = await createKey(a.auth, { name: 'A manager', role: 'api_manager' });
    bKey = await createKey(b.auth, { name: 'B key', role: 'viewer' });
  });

  it("answers 404 to another organization for a key's GET, PATCH, rotate, DELETE and audit-log", async () => {
    const path = `/v1/api-keys/${aKey.id}`;
    expectProblem(await t.http.get(path).set(b.auth), 404, 'not_found');
    expectProblem(await t.http.patch(path).set(b.auth).send({ name: 'stolen' }), 404, 'not_found');
    expectProblem(await t.http.post(`${path}/rotate`).set(b.auth).send({}), 404, 'not_found');
    expectProblem(await t.http.delete(path).set(b.auth), 404, 'not_found');
    expectProblem(await t.http.get(`${path}/audit-log`).set(b.auth), 404, 'not_found');

    // Nothing happened to it.
    const unchanged = await getKey(a.auth, aKey.id);
    expect(unchanged).toMatchObject({ name: 'A key', last_rotated_at: null, status: 'active' });
    await expectVerified(aKey.key);
  });

  it("never lists another organization's keys", async () => {
    const bIds = await listIds(b.auth);
    expect(bIds).toContain(bKey.id);
    expect(bIds).not.toContain(aKey.id);
    expect(bIds).not.toContain(aManagerKey.id);
    expect(await listIds(b.auth, { owner_id: a.userId })).toEqual([]);
  });

  it("an organization's key works only within it", async () => {
    const listedWithKey = await listIds(bearer(aManagerKey.key));
    expect(sorted(listedWithKey)).toEqual(sorted([aKey.id, aManagerKey.id]));
    expect(listedWithKey).toEqual(await listIds(a.auth));
    expectProblem(await t.http.get(`/v1/api-keys/${bKey.id}`).set(bearer(aManagerKey.key)), 404, 'not_found');
    expectProblem(
      await t.http.post(`/v1/api-keys/${bKey.id}/rotate`).set(bearer(aManagerKey.key)).send({}),
      404,
      'not_found',
    );
    expectProblem(
      await t.http.delete(`/v1/api-keys/${bKey.id}`).set(bearer(aManagerKey.key)),
      404,
      'not_found',
    );
    await expectVerified(bKey.key);

    // A key it creates belongs to its own organization.
    const made = await t.http
      .post('/v1/api-keys')
      .set(bearer(aManagerKey.key))
      .send({ name: 'made', role: 'viewer' });
    expectStatus(made, 201);
    expect(await listIds(a.auth)).toContain(made.body.id);
    expect(await listIds(b.auth)).not.toContain(made.body.id);
  });
});

describe('usage', () => {
  it('sets last_used_at after the key is used', async () => {
    const org = await signUpOrganization(t.http, 'Usage');
    const created = await createKey(org.auth, { name: 'used', role: 'viewer' });
    expect((await getKey(org.auth, created.id)).last_used_at).toBeNull();

    const usedFrom = Date.now();
    await expectVerified(created.key);
    const shown = await pollUntil(
      () => getKey(org.auth, created.id),
      (key) => key.last_used_at !== null,
      5_000,
    );
    expect(shown.last_used_at).toMatch(ISO_TIMESTAMP);
    expect(Date.parse(shown.last_used_at)).toBeGreaterThanOrEqual(usedFrom - 1_000);
    expect(Date.parse(shown.last_used_at)).toBeGreaterThanOrEqual(Date.parse(created.created_at));
  });
});

describe('one kept-alive connection', () => {
  // The key check remembers the last value hashed on each connection (ConnectionHashMemo): these
  // requests all travel on one socket, so each answer shows that what is remembered is only the hash.
  let connection: OneConnection;
  beforeAll(async () => {
    connection = await oneConnection(t.app);
  });
  afterAll(() => connection?.close());

  const verifyOnConnection = (value: string) => connection.request('GET', '/v1/auth/verify', bearer(value));

  it('tells keys apart, checks every new value and sees a deletion at the next request', async () => {
    const org = await signUpOrganization(t.http, 'KeepAlive');
    const first = await createKey(org.auth, { name: 'first', role: 'viewer' });
    const second = await createKey(org.auth, { name: 'second', role: 'developer' });
    const opened = connection.sockets();

    expect(await verifyOnConnection(first.key)).toMatchObject({ status: 200, body: { key_id: first.id } });
    expect(await verifyOnConnection(first.key)).toMatchObject({ status: 200, body: { key_id: first.id } });
    expect(await verifyOnConnection(second.key)).toMatchObject({ status: 200, body: { key_id: second.id } });
    // A value one character off the remembered one is checked as any new value: its checksum fails.
    const last = second.key.length - 1;
    const altered = second.key.slice(0, last) + (second.key[last] === 'Z' ? 'Y' : 'Z');
    expect(await verifyOnConnection(altered)).toMatchObject({ status: 401, body: { code: 'malformed_key' } });
    expect(await verifyOnConnection(first.key)).toMatchObject({ status: 200, body: { key_id: first.id } });

    expectStatus(await t.http.delete(`/v1/api-keys/${first.id}`).set(org.auth), 204);
    expect(await verifyOnConnection(first.key)).toMatchObject({
      status: 401,
      body: { code: 'invalid_credentials' },
    });
    // All of it on one connection, so the remembered hash was in play each time.
    expect(connection.sockets() - opened).toBe(1);
  });
});
