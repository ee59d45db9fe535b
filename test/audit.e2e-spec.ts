import { rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import {
  createUser,
  expectProblem,
  PASSWORD,
  listAll,
  SignedUpOrganization,
  signUpOrganization,
} from './support/factories';
import type { AuditEntry } from './support/audit-log';
import { pollUntil } from './support/keys';
import { forgeEntry, relinkWithoutKey, skipSequence, storedEntries } from './support/audit-tampering';
import { dropTestDatabase, startTestApp, TestApp } from './support/test-app';

type Auth = { Authorization: string } | { 'X-API-Key': string };

interface CreatedKey {
  id: string;
  key: string;
  [field: string]: any;
}

const USER_AGENT = 'gatehouse-audit-e2e/1.0 (+https://example.test)';
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const AUDIT_ID = /^aud_[0-9A-Za-z]{22}$/;
const HEX_64 = /[0-9a-f]{64}/i;

/** An entry as the contract shapes it, and nothing more (in particular no hash of the chain). */
function expectEntryShape(entry: AuditEntry): void {
  expect(Object.keys(entry).sort()).toEqual(
    ['action', 'actor', 'created_at', 'details', 'id', 'ip', 'key_id', 'user_agent'].sort(),
  );
  expect(entry.id).toMatch(AUDIT_ID);
  expect(entry.created_at).toMatch(ISO);
  expect(['user', 'api_key', 'system']).toContain(entry.actor.type);
  expect(typeof entry.details).toBe('object');
  expect(entry.details).not.toBeNull();
}

function expectNewestFirst(entries: AuditEntry[]): void {
  const times = entries.map((e) => Date.parse(e.created_at));
  expect([...times].sort((x, y) => y - x)).toEqual(times);
}

describe('audit log', () => {
  let t: TestApp;
  let a: SignedUpOrganization;
  let b: SignedUpOrganization;

  beforeAll(async () => {
    t = await startTestApp({
      env: { KEY_EXPIRY_SCAN_SECONDS: '1', AUDIT_DENIAL_WINDOW_SECONDS: '1' },
    });
    a = await signUpOrganization(t.http, 'Audit A');
    b = await signUpOrganization(t.http, 'Audit B');
  });
  afterAll(() => t.close());

  async function createKey(auth: Auth, body: Record<string, unknown>): Promise<CreatedKey> {
    const res = await t.http.post('/v1/api-keys').set(auth).set('User-Agent', USER_AGENT).send(body);
    expect(res.status).toBe(201);
    return res.body;
  }

  async function keyLog(auth: Auth, keyId: string): Promise<AuditEntry[]> {
    const res = await t.http
      .get(`/v1/api-keys/${keyId}/audit-log`)
      .query({ limit: 100 })
      .set(auth)
      .expect(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body.next_cursor).toBeNull();
    return res.body.data;
  }

  /** The whole organization log (or a filtered part), following next_cursor to the end. */
  const orgLog = (auth: Auth, filters: Record<string, string> = {}): Promise<AuditEntry[]> =>
    listAll(t.http, '/v1/audit-log', auth, filters);

  /** Polls until `read` returns entries satisfying `done`, for batched or swept writes. */
  async function waitFor(
    read: () => Promise<AuditEntry[]>,
    done: (entries: AuditEntry[]) => boolean,
    timeoutMs = 8000,
  ): Promise<AuditEntry[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const entries = await read();
      if (done(entries) || Date.now() > deadline) return entries;
      await sleep(200);
    }
  }

  describe('key lifecycle entries', () => {
    it('records create, update and rotate, newest first, with actor, ip, user agent and details', async () => {
      const key = await createKey(a.auth, { name: 'lifecycle', role: 'developer' });
      await t.http
        .patch(`/v1/api-keys/${key.id}`)
        .set(a.auth)
        .set('User-Agent', USER_AGENT)
        .send({ name: 'lifecycle-renamed', description: 'now described' })
        .expect(200);
      await t.http
        .post(`/v1/api-keys/${key.id}/rotate`)
        .set(a.auth)
        .set('User-Agent', USER_AGENT)
        .send({ grace_period_seconds: 60 })
        .expect(200);

      const entries = await keyLog(a.auth, key.id);
      expect(entries.map((e) => e.action)).toEqual(['key.rotated', 'key.updated', 'key.created']);
      expectNewestFirst(entries);
      for (const entry of entries) {
        expectEntryShape(entry);
        expect(entry.key_id).toBe(key.id);
        expect(entry.actor).toEqual({ type: 'user', id: a.userId });
        expect(typeof entry.ip).toBe('string');
        expect(entry.ip!.length).toBeGreaterThan(0);
        expect(entry.user_agent).toBe(USER_AGENT);
      }
      const [rotated, updated] = entries;
      expect(updated.details.fields).toEqual(['description', 'name']);
      expect(rotated.details.grace_period_seconds).toBe(60);
      expect(typeof rotated.details.previous_key_expires_at).toBe('string');
      expect(new Set(entries.map((e) => e.id)).size).toBe(3);

      // The organization log shows the same entries, and key_id narrows it to this key.
      const filtered = await orgLog(a.auth, { key_id: key.id });
      expect(filtered).toEqual(entries);
    });

    it('records an API key as the actor when a key manages keys', async () => {
      const manager = await createKey(a.auth, { name: 'manager', role: 'api_manager' });
      const managerAuth = { 'X-API-Key': manager.key };

      const managed = await createKey(managerAuth, { name: 'managed', role: 'viewer', type: 'service' });
      await t.http
        .patch(`/v1/api-keys/${managed.id}`)
        .set({ Authorization: `Bearer ${manager.key}` })
        .set('User-Agent', USER_AGENT)
        .send({ description: 'changed by a key' })
        .expect(200);
      await t.http
        .post(`/v1/api-keys/${managed.id}/rotate`)
        .set(managerAuth)
        .set('User-Agent', USER_AGENT)
        .send({})
        .expect(200);

      const entries = await keyLog(managerAuth, managed.id);
      expect(entries.map((e) => e.action)).toEqual(['key.rotated', 'key.updated', 'key.created']);
      for (const entry of entries) {
        expectEntryShape(entry);
        expect(entry.actor).toEqual({ type: 'api_key', id: manager.id });
        expect(entry.user_agent).toBe(USER_AGENT);
      }
      expect(entries[0].details.grace_period_seconds).toBe(0);
    });

    it('records key.deleted, visible in the organization log after the key itself answers 404', async () => {
      const key = await createKey(a.auth, { name: 'doomed', role: 'viewer' });
      await t.http.delete(`/v1/api-keys/${key.id}`).set(a.auth).set('User-Agent', USER_AGENT).expect(204);

      expectProblem(await t.http.get(`/v1/api-keys/${key.id}/audit-log`).set(a.auth), 404, 'not_found');
      expectProblem(await t.http.get('/v1/auth/verify').set({ 'X-API-Key': key.key }), 401);

      const deleted = await orgLog(a.auth, { key_id: key.id, action: 'key.deleted' });
      expect(deleted).toHaveLength(1);
      expectEntryShape(deleted[0]);
      expect(deleted[0]).toMatchObject({
        action: 'key.deleted',
        key_id: key.id,
        actor: { type: 'user', id: a.userId },
        user_agent: USER_AGENT,
      });

      const all = await orgLog(a.auth, { key_id: key.id });
      expect(all.map((e) => e.action)).toEqual(['key.deleted', 'key.created']);
    });

    it("records key.revoked (owner_deactivated) for each of a deactivated user's personal keys", async () => {
      const owner = await createUser(t.http, a, 'api_manager');
      const personal1 = await createKey(owner.auth, { name: 'p1', role: 'viewer' });
      const personal2 = await createKey(owner.auth, { name: 'p2', role: 'api_manager' });
      const service = await createKey(owner.auth, { name: 'svc', role: 'viewer', type: 'service' });

      await t.http.post(`/v1/users/${owner.id}/deactivate`).set(a.auth).expect(200);

      const revoked = await orgLog(a.auth, { action: 'key.revoked' });
      const ours = revoked.filter((e) => [personal1.id, personal2.id, service.id].includes(e.key_id!));
      expect(ours.map((e) => e.key_id).sort()).toEqual([personal1.id, personal2.id].sort());
      for (const entry of ours) {
        expectEntryShape(entry);
        expect(entry.action).toBe('key.revoked');
        expect(entry.details.reason).toBe('owner_deactivated');
        expect(entry.actor).toEqual({ type: 'user', id: a.userId });
      }

      for (const key of [personal1, personal2]) {
        const log = await keyLog(a.auth, key.id);
        expect(log.map((e) => e.action)).toEqual(['key.revoked', 'key.created']);
        const view = await t.http.get(`/v1/api-keys/${key.id}`).set(a.auth).expect(200);
        expect(view.body.status).toBe('revoked');
        expectProblem(await t.http.get('/v1/auth/verify').set({ 'X-API-Key': key.key }), 401);
      }
      expect((await keyLog(a.auth, service.id)).map((e) => e.action)).toEqual(['key.created']);

      // Deactivating again revokes nothing new.
      await t.http.post(`/v1/users/${owner.id}/deactivate`).set(a.auth).expect(200);
      const again = await orgLog(a.auth, { action: 'key.revoked' });
      expect(again.filter((e) => [personal1.id, personal2.id].includes(e.key_id!))).toHaveLength(2);
    });
  });

  describe('entries written by background work', () => {
    it('records key.expired exactly once, by the system, when the expiry job finds the key', async () => {
      const expiration = new Date(Date.now() + 1500).toISOString();
      const key = await createKey(a.auth, { name: 'short-lived', role: 'viewer', expiration });
      expect(key.expiration).toBe(expiration);

      const isExpired = (e: AuditEntry): boolean => e.action === 'key.expired';
      await waitFor(
        () => keyLog(a.auth, key.id),
        (entries) => entries.some(isExpired),
      );
      // Several more scans run (every second); none may record it again.
      await sleep(2500);
      const entries = await keyLog(a.auth, key.id);
      const expired = entries.filter(isExpired);
      expect(expired).toHaveLength(1);
      expectEntryShape(expired[0]);
      expect(expired[0].actor).toEqual({ type: 'system', id: null });
      expect(expired[0].key_id).toBe(key.id);
      expect(expired[0].details.expiration).toBe(expiration);
      expect(Date.parse(expired[0].created_at)).toBeGreaterThanOrEqual(Date.parse(expiration));

      expectProblem(await t.http.get('/v1/auth/verify').set({ 'X-API-Key': key.key }), 401, 'key_expired');
      const view = await t.http.get(`/v1/api-keys/${key.id}`).set(a.auth).expect(200);
      expect(view.body.status).toBe('expired');
      expect((await orgLog(a.auth, { action: 'key.expired', key_id: key.id })).length).toBe(1);
    });

    it('writes the first denial at once and coalesces the rest of the window into one entry with the count', async () => {
      const viewer = await createKey(a.auth, { name: 'viewer', role: 'viewer' });
      const viewerAuth = { 'X-API-Key': viewer.key };
      await t.http.get('/v1/auth/verify').set(viewerAuth).expect(200);

      const refusals = await Promise.all(
        Array.from({ length: 5 }, () =>
          t.http
            .post('/v1/api-keys')
            .set(viewerAuth)
            .set('User-Agent', USER_AGENT)
            .send({ name: 'not allowed', role: 'viewer' }),
        ),
      );
      for (const res of refusals) expectProblem(res, 403, 'forbidden');

      const read = () => orgLog(a.auth, { key_id: viewer.id, action: 'key.denied' });
      // AUDIT_DENIAL_WINDOW_SECONDS=1 here; the first refusal does not wait for the window.
      const first = await waitFor(read, (entries) => entries.length > 0, 900);
      expect(first.map((entry) => entry.details.count)).toContain(1);
      await sleep(2200);
      const denied = await read();
      // Oldest last: the rest of the window (4), then the first refusal (1), written at once.
      expect(denied.map((entry) => entry.details.count)).toEqual([4, 1]);
      for (const entry of denied) {
        expectEntryShape(entry);
        expect(entry).toMatchObject({
          action: 'key.denied',
          key_id: viewer.id,
          actor: { type: 'api_key', id: viewer.id },
          user_agent: USER_AGENT,
        });
        expect(entry.details.reason).toBe('forbidden');
        expect(entry.details.missing_permissions).toEqual(['api_keys:create']);
      }

      // Nothing was created by the refused calls.
      const created = await orgLog(a.auth, { action: 'key.created' });
      expect(created.filter((e) => e.details.name === 'not allowed')).toHaveLength(0);

      // A later refusal opens a new window, written at once too.
      expectProblem(await t.http.get('/v1/api-keys').set(viewerAuth), 403, 'forbidden');
      const later = await waitFor(read, (entries) => entries.length > 2);
      expect(later).toHaveLength(3);
      expect(later[0].details.count).toBe(1);
      expect(later.slice(1).map((entry) => entry.id)).toEqual(denied.map((entry) => entry.id));
    });
  });

  describe('listing', () => {
    let c: SignedUpOrganization;
    let keys: CreatedKey[];

    beforeAll(async () => {
      c = await signUpOrganization(t.http, 'Audit C');
      keys = [];
      for (const name of ['one', 'two', 'three'])
        keys.push(await createKey(c.auth, { name, role: 'viewer' }));
      await t.http.patch(`/v1/api-keys/${keys[0].id}`).set(c.auth).send({ name: 'one-renamed' }).expect(200);
      await t.http.post(`/v1/api-keys/${keys[1].id}/rotate`).set(c.auth).send({}).expect(200);
    });

    it('filters by action and by key_id', async () => {
      const created = await orgLog(c.auth, { action: 'key.created' });
      expect(created).toHaveLength(3);
      expect(created.every((e) => e.action === 'key.created')).toBe(true);
      expect(created.map((e) => e.key_id)).toEqual([keys[2].id, keys[1].id, keys[0].id]);

      const forFirst = await orgLog(c.auth, { key_id: keys[0].id });
      expect(forFirst.map((e) => e.action)).toEqual(['key.updated', 'key.created']);
      expect(forFirst.every((e) => e.key_id === keys[0].id)).toBe(true);

      const both = await orgLog(c.auth, { key_id: keys[1].id, action: 'key.rotated' });
      expect(both).toHaveLength(1);
      expect(both[0]).toMatchObject({ key_id: keys[1].id, action: 'key.rotated' });

      expect(await orgLog(c.auth, { key_id: keys[2].id, action: 'key.rotated' })).toEqual([]);
      // An action the log never records is refused (400, see below) rather than matching nothing.
    });

    it('pages with limit and cursor, newest first, without gaps or repeats', async () => {
      const everything = await orgLog(c.auth);
      expect(everything).toHaveLength(5);
      expectNewestFirst(everything);

      const seen: AuditEntry[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const res: Response = await t.http
          .get('/v1/audit-log')
          .query(cursor ? { limit: 2, cursor } : { limit: 2 })
          .set(c.auth)
          .expect(200);
        expect(res.body.data.length).toBeLessThanOrEqual(2);
        seen.push(...res.body.data);
        cursor = res.body.next_cursor;
        pages += 1;
      } while (cursor && pages < 10);
      expect(pages).toBe(3);
      expect(seen).toEqual(everything);

      const first = await t.http.get('/v1/audit-log').set(c.auth).expect(200);
      expect(first.body.data).toEqual(everything);
      expect(first.body.next_cursor).toBeNull();

      const keyPage = await t.http
        .get(`/v1/api-keys/${keys[0].id}/audit-log`)
        .query({ limit: 1 })
        .set(c.auth)
        .expect(200);
      expect(keyPage.body.data.map((e: AuditEntry) => e.action)).toEqual(['key.updated']);
      expect(typeof keyPage.body.next_cursor).toBe('string');
      const keyPage2 = await t.http
        .get(`/v1/api-keys/${keys[0].id}/audit-log`)
        .query({ limit: 1, cursor: keyPage.body.next_cursor })
        .set(c.auth)
        .expect(200);
      expect(keyPage2.body.data.map((e: AuditEntry) => e.action)).toEqual(['key.created']);
      expect(keyPage2.body.next_cursor).toBeNull();
    });

    it('refuses bad list parameters with 400', async () => {
      for (const query of [
        { limit: '0' },
        { limit: '101' },
        { limit: 'many' },
        { cursor: 'not-a-cursor' },
        { action: 'DROP TABLE' },
        // Well formed, but not an action the log records (the OpenAPI document lists them).
        { action: 'key.exploded' },
        { unknown_filter: 'x' },
      ]) {
        const res = await t.http.get('/v1/audit-log').query(query).set(c.auth);
        expectProblem(res, 400);
        expect(Array.isArray(res.body.errors)).toBe(true);
        expect(res.body.errors.length).toBeGreaterThan(0);
      }
    });

    it('needs audit:read: 403 for a developer, 200 for an api_manager', async () => {
      const developer = await createUser(t.http, c, 'developer');
      expectProblem(await t.http.get('/v1/audit-log').set(developer.auth), 403, 'forbidden');
      expectProblem(await t.http.get('/v1/audit-log/integrity').set(developer.auth), 403, 'forbidden');
      expectProblem(
        await t.http.get(`/v1/api-keys/${keys[0].id}/audit-log`).set(developer.auth),
        403,
        'forbidden',
      );

      const manager = await createUser(t.http, c, 'api_manager');
      const res = await t.http.get('/v1/audit-log').set(manager.auth).expect(200);
      expect(res.body.data.length).toBeGreaterThanOrEqual(5);
      await t.http.get('/v1/audit-log/integrity').set(manager.auth).expect(200);
      await t.http.get(`/v1/api-keys/${keys[0].id}/audit-log`).set(manager.auth).expect(200);

      const managerKey = await createKey(manager.auth, { name: 'reader', role: 'api_manager' });
      await t.http.get('/v1/audit-log').set({ 'X-API-Key': managerKey.key }).expect(200);
      const devKey = await createKey(c.auth, { name: 'dev', role: 'developer' });
      expectProblem(await t.http.get('/v1/audit-log').set({ 'X-API-Key': devKey.key }), 403, 'forbidden');

      expectProblem(await t.http.get('/v1/audit-log'), 401);
    });
  });

  describe('secrets', () => {
    it('never shows a key value, a key hash or a password in any audit response', async () => {
      const d = await signUpOrganization(t.http, 'Audit D');
      const key = await createKey(d.auth, { name: 'secret-bearer', role: 'api_manager' });
      const rotated = (
        await t.http
          .post(`/v1/api-keys/${key.id}/rotate`)
          .set(d.auth)
          .send({ grace_period_seconds: 30 })
          .expect(200)
      ).body as CreatedKey;
      expect(rotated.key).not.toBe(key.key);
      // Act with both values so their use is on the record too.
      const child = await createKey({ 'X-API-Key': rotated.key }, { name: 'child', role: 'viewer' });
      await t.http
        .patch(`/v1/api-keys/${child.id}`)
        .set({ 'X-API-Key': key.key })
        .send({ allowed_ips: ['10.0.0.0/8'] })
        .expect(200);
      const user = await createUser(t.http, d, 'api_manager');
      await createKey(user.auth, { name: 'personal', role: 'viewer' });
      await t.http.post(`/v1/users/${user.id}/deactivate`).set(d.auth).expect(200);
      // A denial, written later by the sweep.
      const viewer = await createKey(d.auth, { name: 'viewer', role: 'viewer' });
      expectProblem(await t.http.get('/v1/audit-log').set({ 'X-API-Key': viewer.key }), 403, 'forbidden');
      await waitFor(
        () => orgLog(d.auth, { action: 'key.denied' }),
        (entries) => entries.length > 0,
      );

      const responses = [
        await t.http.get('/v1/audit-log').query({ limit: 100 }).set(d.auth).expect(200),
        await t.http.get('/v1/audit-log/integrity').set(d.auth).expect(200),
        ...(await Promise.all(
          [key, child, viewer].map((k) =>
            t.http.get(`/v1/api-keys/${k.id}/audit-log`).set(d.auth).expect(200),
          ),
        )),
      ];
      const entries = responses[0].body.data as AuditEntry[];
      expect(entries.map((e) => e.action)).toEqual(
        expect.arrayContaining(['key.created', 'key.rotated', 'key.updated', 'key.revoked', 'key.denied']),
      );
      for (const res of responses) {
        const text = res.text;
        for (const secret of [key.key, rotated.key, child.key, viewer.key, PASSWORD]) {
          expect(text).not.toContain(secret);
        }
        expect(text).not.toMatch(HEX_64);
        // No field of any name like a hash or a password (values are checked above).
        expect(text).not.toMatch(/"[^"]*(hash|password)[^"]*"\s*:/i);
      }
    });
  });

  describe('hash chain', () => {
    // Chains per organization, and a removed entry, are audit.medium-spec.ts's: here, the answer on the wire.
    it('verifies the chain, and names the first entry changed behind its back', async () => {
      const e = await signUpOrganization(t.http, 'Audit E');
      const k1 = await createKey(e.auth, { name: 'chain-1', role: 'viewer' });
      const k2 = await createKey(e.auth, { name: 'chain-2', role: 'developer' });
      await t.http.patch(`/v1/api-keys/${k1.id}`).set(e.auth).send({ name: 'chain-1b' }).expect(200);
      await t.http.post(`/v1/api-keys/${k2.id}/rotate`).set(e.auth).send({}).expect(200);
      await t.http.delete(`/v1/api-keys/${k1.id}`).set(e.auth).expect(204);

      const entries = await orgLog(e.auth);
      expect(entries).toHaveLength(5);
      const ok = await t.http.get('/v1/audit-log/integrity').set(e.auth).expect(200);
      expect(ok.headers['content-type']).toMatch(/^application\/json/);
      expect(ok.body).toEqual({
        valid: true,
        entries: 5,
        legacy_entries: 0,
        first_invalid_id: null,
        problem: null,
        checkpoint: {
          entries: 5,
          entry_id: entries[0].id,
          created_at: entries[0].created_at,
          token: expect.stringMatching(/^c1\.5\./),
        },
      });

      // Tamper with the middle entry (newest first: deleted, rotated, updated, created, created).
      const target = entries[2];
      expect(target.action).toBe('key.updated');
      const dataSource = t.app.get(DataSource);
      await dataSource.query(`UPDATE audit_entries SET details = '{"tampered":true}' WHERE id = $1`, [
        target.id,
      ]);

      const broken = await t.http.get('/v1/audit-log/integrity').set(e.auth).expect(200);
      expect(broken.body).toEqual({
        valid: false,
        entries: 5,
        legacy_entries: 0,
        first_invalid_id: target.id,
        problem: 'entry_altered',
        checkpoint: null,
      });
    });

    // Against someone with write access to the database but not AUDIT_CHAIN_SECRET: plain SQL, and the
    // only link such a person can compute, keyless SHA-256 (what the chain was before it had a key).
    const integrity = async (org: SignedUpOrganization, checkpoint?: string): Promise<Response> => {
      const res = await t.http
        .get('/v1/audit-log/integrity')
        .query(checkpoint ? { checkpoint } : {})
        .set(org.auth)
        .expect(200);
      return res;
    };
    /** An organization with `count` entries (one key created each), its rows as stored, oldest first. */
    async function organizationWithEntries(name: string, count: number) {
      const org = await signUpOrganization(t.http, name);
      for (let n = 0; n < count; n++) {
        await createKey(org.auth, { name: `${name}-${n}`, role: 'viewer' });
        // A sequence number nobody uses after each: room for a forged entry in the middle.
        await skipSequence(t.app.get(DataSource));
      }
      const rows = await storedEntries(t.app.get(DataSource), org.organizationId);
      expect(rows).toHaveLength(count);
      return { org, rows };
    }

    it('names an entry edited with every link after it recomputed by keyless SHA-256', async () => {
      const { org, rows } = await organizationWithEntries('Audit tamper edit', 5);
      const dataSource = t.app.get(DataSource);
      await dataSource.query(`UPDATE audit_entries SET details = '{"name":"innocent"}' WHERE id = $1`, [
        rows[2].id,
      ]);
      rows[2].details = { name: 'innocent' };
      await relinkWithoutKey(dataSource, rows, 2);
      expect((await integrity(org)).body).toMatchObject({
        valid: false,
        entries: 5,
        first_invalid_id: rows[2].id,
        problem: 'entry_altered',
        checkpoint: null,
      });
    });

    it('names an entry forged into the middle of the chain', async () => {
      const { org, rows } = await organizationWithEntries('Audit tamper forge', 4);
      const dataSource = t.app.get(DataSource);
      const forged = await forgeEntry(dataSource, rows[1], {
        id: 'aud_ForgedEntry00000000000',
        sequence: String(BigInt(rows[1].sequence) + 1n),
      });
      await relinkWithoutKey(dataSource, [...rows.slice(0, 2), forged, ...rows.slice(2)], 3);
      expect((await integrity(org)).body).toMatchObject({
        valid: false,
        entries: 5,
        first_invalid_id: forged.id,
        problem: 'entry_altered',
      });
    });

    it('detects the last entries deleted, by the head and by a checkpoint kept from an earlier answer', async () => {
      const { org, rows } = await organizationWithEntries('Audit tamper truncate', 5);
      const { checkpoint } = (await integrity(org)).body;
      expect(checkpoint).toMatchObject({ entries: 5, entry_id: rows[4].id });
      expect((await integrity(org, checkpoint.token)).body).toMatchObject({ valid: true, entries: 5 });

      await t.app
        .get(DataSource)
        .query(`DELETE FROM audit_entries WHERE id = ANY($1)`, [rows.slice(3).map((row) => row.id)]);
      for (const res of [await integrity(org), await integrity(org, checkpoint.token)]) {
        expect(res.body).toEqual({
          valid: false,
          entries: 3,
          legacy_entries: 0,
          first_invalid_id: null,
          problem: 'entries_missing',
          checkpoint: null,
        });
      }
    });

    it('refuses a checkpoint it did not sign (400), or one of another organization', async () => {
      const { org } = await organizationWithEntries('Audit checkpoint A', 1);
      const other = await organizationWithEntries('Audit checkpoint B', 1);
      const { token } = (await integrity(org)).body.checkpoint;
      const [version, entries, entryId, link, signature] = token.split('.');
      const forgedSignature = (signature[0] === 'A' ? 'B' : 'A') + signature.slice(1);
      for (const [who, checkpoint] of [
        [org, [version, entries, entryId, link, forgedSignature].join('.')],
        [org, [version, '2', entryId, link, signature].join('.')],
        [other.org, token],
      ] as const) {
        const res = await t.http.get('/v1/audit-log/integrity').query({ checkpoint }).set(who.auth);
        expectProblem(res, 400, 'invalid_checkpoint');
        expect(res.body.errors).toEqual([{ field: 'checkpoint', message: expect.any(String) }]);
      }
      const malformed = await t.http
        .get('/v1/audit-log/integrity')
        .query({ checkpoint: 'not-a-checkpoint' })
        .set(org.auth);
      expectProblem(malformed, 400, 'validation_failed');
    });
  });

  describe('isolation between organizations', () => {
    it("another organization never sees A's entries and gets 404 on A's key audit log", async () => {
      const aKey = await createKey(a.auth, { name: 'a-private', role: 'viewer' });
      await createKey(b.auth, { name: 'b-own', role: 'viewer' });

      const aEntries = await orgLog(a.auth);
      expect(aEntries.length).toBeGreaterThan(0);
      const aIds = new Set(aEntries.map((e) => e.id));

      const bEntries = await orgLog(b.auth);
      expect(bEntries.length).toBeGreaterThan(0);
      expect(bEntries.filter((e) => aIds.has(e.id))).toEqual([]);
      expect(bEntries.map((e) => e.key_id)).not.toContain(aKey.id);

      expect(await orgLog(b.auth, { key_id: aKey.id })).toEqual([]);
      expect(await orgLog(b.auth, { action: 'key.created', key_id: aKey.id })).toEqual([]);
      expectProblem(await t.http.get(`/v1/api-keys/${aKey.id}/audit-log`).set(b.auth), 404, 'not_found');

      const bKey = await createKey(b.auth, { name: 'b-reader', role: 'api_manager' });
      expectProblem(
        await t.http.get(`/v1/api-keys/${aKey.id}/audit-log`).set({ 'X-API-Key': bKey.key }),
        404,
        'not_found',
      );
      const viaKey = await t.http.get('/v1/audit-log').set({ 'X-API-Key': bKey.key }).expect(200);
      expect(viaKey.body.data.filter((e: AuditEntry) => aIds.has(e.id))).toEqual([]);
    });
  });
});

describe('audit entries at shutdown', () => {
  it('writes the pending key.denied window before the database closes, so it is there after a restart', async () => {
    const env = { AUDIT_DENIAL_WINDOW_SECONDS: '60' };
    const first = await startTestApp({ env });
    let second: TestApp | undefined;
    let firstOpen = true;
    try {
      const org = await signUpOrganization(first.http, 'Shutdown');
      const created = await first.http
        .post('/v1/api-keys')
        .set(org.auth)
        .send({ name: 'limited', role: 'viewer', rate_limit: { requests_per_minute: 1 } })
        .expect(201);
      const keyAuth = { Authorization: `Bearer ${created.body.key}` };
      await first.http.get('/v1/auth/verify').set(keyAuth).expect(200);
      for (let i = 0; i < 3; i++) await first.http.get('/v1/auth/verify').set(keyAuth).expect(429);

      const denials = async (app: TestApp): Promise<number[]> =>
        (
          await app.http
            .get('/v1/audit-log')
            .query({ action: 'key.denied', key_id: created.body.id })
            .set(org.auth)
            .expect(200)
        ).body.data.map((entry: AuditEntry) => entry.details.count);
      // The first refusal is in the log within seconds, long before its 60-second window closes.
      const { value: early } = await pollUntil(
        () => denials(first),
        (counts) => counts.length > 0,
        {
          timeoutMs: 2000,
        },
      );
      expect(early).toEqual([1]);

      await first.close({ keepData: true });
      firstOpen = false;
      second = await startTestApp({ databaseUrl: first.databaseUrl, dataDir: first.dataDir, env });
      // The two refusals after it, coalesced, were written at shutdown.
      expect(await denials(second)).toEqual([2, 1]);
    } finally {
      await second?.close({ keepData: true });
      if (firstOpen) await first.close({ keepData: true });
      if (first.databaseUrl) await dropTestDatabase(first.databaseUrl);
      rmSync(first.dataDir, { recursive: true, force: true });
    }
  });
});
