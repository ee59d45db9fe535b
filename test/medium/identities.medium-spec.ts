import { DataSource } from 'typeorm';
import type { Principal } from '../../src/access/principal';
import { ApiKeysModule } from '../../src/api-keys/api-keys.module';
import { ApiKeyLifecycleService } from '../../src/api-keys/api-key-lifecycle.service';
import { AuditService } from '../../src/audit/audit.service';
import { IdentitiesModule } from '../../src/identities/identities.module';
import { IdentitiesService } from '../../src/identities/identities.service';
import { ServiceContext, startFeatureContext } from '../support/feature-context';
import { nextMillisecond } from '../support/pagination';
import { administratorOf, testId } from '../support/principals';

const origin = { ip: '127.0.0.1', userAgent: 'medium-spec' };
let externals = 0;
const externalId = (label = 'cus'): string => `${label}_${++externals}_${Date.now()}`;

/**
 * Identities (the customers behind keys) through IdentitiesService on a real database, without HTTP:
 * scoped to the caller's organization, external_id unique in it, the credits a create or an update
 * sets, and no deletion while a key names the identity. ApiKeysModule is loaded for the keys that name
 * identities (it registers the key counts and the credit ledger with the identities module); it brings
 * the accounts module whose organizations the identities' foreign key needs. Body validation and the
 * routes' permissions are test/identities.e2e-spec.ts's.
 */
describe('identities (service level)', () => {
  let context: ServiceContext;
  let identities: IdentitiesService;
  let a: Principal;
  let b: Principal;

  beforeAll(async () => {
    context = await startFeatureContext({ imports: [IdentitiesModule, ApiKeysModule] });
    identities = context.get(IdentitiesService);
    a = await administratorOf(context, 'IdentitiesA');
    b = await administratorOf(context, 'IdentitiesB');
  });
  afterAll(() => context?.close());

  const rowsWithExternalId = async (organizationId: string, external: string): Promise<number> => {
    const [{ n }] = await context
      .get(DataSource)
      .query<{ n: number }[]>(
        `SELECT count(*)::int AS n FROM identities WHERE organization_id = $1 AND external_id = $2`,
        [organizationId, external],
      );
    return n;
  };

  const auditedIdentities = async (principal: Principal, action: string): Promise<string[]> =>
    (await context.get(AuditService).list(principal.organizationId, { action, limit: 100 })).data.map(
      (entry) => entry.details.identity_id as string,
    );

  it('creates an identity in the caller’s organization and reads it back, with its audit entry', async () => {
    const external = externalId();
    const created = await identities.create(a, { external_id: external }, origin);
    expect(created).toEqual({
      id: expect.stringMatching(/^idt_/),
      external_id: external,
      meta: {},
      rate_limit: { requests_per_minute: null, requests_per_hour: null },
      credits: null,
      key_count: 0,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(await identities.get(a, created.id)).toEqual(created);
    expect(await identities.row(a.organizationId, created.id)).toMatchObject({
      organizationId: a.organizationId,
      externalId: external,
      meta: null,
      creditsRemaining: null,
      creditsGeneration: 0,
    });
    expect(await auditedIdentities(a, 'identity.created')).toContain(created.id);
  });

  it('hides an identity from every other organization (not_found), which changes nothing', async () => {
    const created = await identities.create(a, { external_id: externalId(), meta: { plan: 'pro' } }, origin);
    const attempts = [
      () => identities.get(b, created.id),
      () => identities.update(b, created.id, { meta: { plan: 'stolen' } }, origin),
      () => identities.delete(b, created.id, origin),
    ];
    for (const attempt of attempts) {
      await expect(attempt()).rejects.toMatchObject({ code: 'not_found' });
    }
    expect((await identities.list(b, { external_id: created.external_id })).data).toEqual([]);
    expect(await identities.row(b.organizationId, created.id)).toBeNull();
    expect(await identities.summaries(b.organizationId, [created.id])).toEqual(new Map());
    // A key of B cannot name it either: as unknown as an identity that never existed.
    await expect(identities.requireForKey(b.organizationId, created.id)).rejects.toMatchObject({
      code: 'unknown_identity',
    });
    expect(await identities.requireForKey(a.organizationId, created.id)).toEqual({
      id: created.id,
      external_id: created.external_id,
      meta: { plan: 'pro' },
    });
    expect(await identities.get(a, created.id)).toMatchObject({ meta: { plan: 'pro' } });
  });

  it('answers not_found for an id that is not an identity id', async () => {
    for (const id of [testId('idt'), 'idt_nothing', 'key_0000000000000000000000', '']) {
      await expect(identities.get(a, id)).rejects.toMatchObject({ code: 'not_found' });
    }
  });

  it('refuses an external_id the organization already uses (identity_exists) and writes nothing; another organization may use it', async () => {
    const external = externalId('dup');
    const first = await identities.create(a, { external_id: external }, origin);
    await expect(
      identities.create(a, { external_id: external, meta: { second: true } }, origin),
    ).rejects.toMatchObject({
      code: 'identity_exists',
      errors: [{ field: 'external_id', message: expect.any(String) }],
    });
    expect(await rowsWithExternalId(a.organizationId, external)).toBe(1);
    expect((await identities.list(a, { external_id: external })).data.map((i) => i.id)).toEqual([first.id]);
    // The refused create's audit entry was in its transaction: there is only the first's.
    const created = (
      await context.get(AuditService).list(a.organizationId, { action: 'identity.created', limit: 100 })
    ).data.filter((entry) => entry.details.external_id === external);
    expect(created.map((entry) => entry.details.identity_id)).toEqual([first.id]);

    const theirs = await identities.create(b, { external_id: external }, origin);
    expect(theirs.id).not.toBe(first.id);
    expect(await rowsWithExternalId(b.organizationId, external)).toBe(1);
  });

  it('stores the credits, the rate limit and meta a create sets, the baseline at the amount set', async () => {
    const created = await identities.create(
      a,
      {
        external_id: externalId('credits'),
        meta: { plan: 'pro', seats: 3 },
        rate_limit: { requests_per_minute: 100 },
        credits: { remaining: 1000, refill: { interval: 'monthly', amount: 750 } },
      },
      origin,
    );
    expect(created).toMatchObject({
      meta: { plan: 'pro', seats: 3 },
      rate_limit: { requests_per_minute: 100, requests_per_hour: null },
      credits: { remaining: 1000, refill: { interval: 'monthly', amount: 750 }, refilled_at: null },
    });
    expect(await identities.get(a, created.id)).toEqual(created);
    expect(await identities.row(a.organizationId, created.id)).toMatchObject({
      creditsRemaining: 1000,
      creditsBaseline: 1000,
      creditsRefillInterval: 'monthly',
      creditsRefillAmount: 750,
      creditsRefilledAt: null,
      creditsSetAt: expect.any(Date),
      creditsGeneration: 0,
      rateLimitPerMinute: 100,
      rateLimitPerHour: null,
    });
    expect(await identities.creditBalances.read(created.id)).toEqual({
      remaining: 1000,
      baseline: 1000,
      generation: 0,
    });
  });

  describe('update', () => {
    it('changes only the fields it names; meta is replaced whole; credits are set as a new generation', async () => {
      const created = await identities.create(
        a,
        {
          external_id: externalId('patch'),
          meta: { plan: 'starter', region: 'eu' },
          rate_limit: { requests_per_minute: 10, requests_per_hour: 100 },
          credits: { remaining: 20 },
        },
        origin,
      );

      const metaOnly = await identities.update(a, created.id, { meta: { plan: 'pro' } }, origin);
      expect(metaOnly).toMatchObject({
        external_id: created.external_id,
        meta: { plan: 'pro' },
        rate_limit: { requests_per_minute: 10, requests_per_hour: 100 },
        credits: { remaining: 20, refill: null },
        created_at: created.created_at,
      });
      expect((await identities.row(a.organizationId, created.id))?.creditsGeneration).toBe(0);

      // Audit entries list newest first by the millisecond: keep the two updates' apart.
      await nextMillisecond();
      const renamed = externalId('renamed');
      const changed = await identities.update(
        a,
        created.id,
        {
          external_id: renamed,
          rate_limit: { requests_per_hour: 5000 },
          credits: { remaining: 50, refill: { interval: 'daily', amount: 60 } },
        },
        origin,
      );
      expect(changed).toMatchObject({
        id: created.id,
        external_id: renamed,
        meta: { plan: 'pro' },
        // A rate limit is set whole: the per-minute limit it leaves out is gone.
        rate_limit: { requests_per_minute: null, requests_per_hour: 5000 },
        credits: { remaining: 50, refill: { interval: 'daily', amount: 60 }, refilled_at: null },
      });
      expect(await identities.get(a, created.id)).toEqual(changed);
      expect(await identities.creditBalances.read(created.id)).toEqual({
        remaining: 50,
        baseline: 50,
        generation: 1,
      });
      const updates = (
        await context.get(AuditService).list(a.organizationId, { action: 'identity.updated', limit: 100 })
      ).data.filter((entry) => entry.details.identity_id === created.id);
      expect(updates.map((entry) => entry.details.fields)).toEqual([
        ['credits', 'external_id', 'rate_limit'],
        ['meta'],
      ]);
    });

    it('clears meta, the rate limit and the credits with null', async () => {
      const created = await identities.create(
        a,
        {
          external_id: externalId('clear'),
          meta: { plan: 'pro' },
          rate_limit: { requests_per_minute: 5 },
          credits: { remaining: 7, refill: { interval: 'daily', amount: 7 } },
        },
        origin,
      );
      const cleared = await identities.update(
        a,
        created.id,
        { meta: null, rate_limit: null, credits: null },
        origin,
      );
      expect(cleared).toMatchObject({
        external_id: created.external_id,
        meta: {},
        rate_limit: { requests_per_minute: null, requests_per_hour: null },
        credits: null,
      });
      expect(await identities.row(a.organizationId, created.id)).toMatchObject({
        meta: null,
        creditsRemaining: null,
        creditsBaseline: null,
        creditsRefillInterval: null,
        creditsRefillAmount: null,
        creditsSetAt: null,
      });
      expect(await identities.creditBalances.read(created.id)).toBeNull();
    });

    it('refuses an external_id another identity of the organization has (identity_exists), changing nothing of the update', async () => {
      const taken = await identities.create(a, { external_id: externalId('taken') }, origin);
      const mine = await identities.create(
        a,
        { external_id: externalId('mine'), meta: { kept: true }, credits: { remaining: 5 } },
        origin,
      );
      await expect(
        identities.update(
          a,
          mine.id,
          { external_id: taken.external_id, meta: { kept: false }, credits: { remaining: 99 } },
          origin,
        ),
      ).rejects.toMatchObject({ code: 'identity_exists' });
      expect(await identities.get(a, mine.id)).toMatchObject({
        external_id: mine.external_id,
        meta: { kept: true },
        credits: { remaining: 5 },
      });
      expect(await identities.creditBalances.read(mine.id)).toEqual({
        remaining: 5,
        baseline: 5,
        generation: 0,
      });
      expect(await rowsWithExternalId(a.organizationId, taken.external_id)).toBe(1);
    });
  });

  it('lists newest first, page by page, and filters by external_id', async () => {
    const org = await administratorOf(context, 'IdentitiesPaged');
    const made: string[] = [];
    for (let i = 0; i < 5; i++) {
      await nextMillisecond();
      made.push((await identities.create(org, { external_id: `list_${i}` }, origin)).id);
    }
    const newestFirst = [...made].reverse();
    const first = await identities.list(org, { limit: 2 });
    const second = await identities.list(org, { limit: 2, cursor: first.next_cursor! });
    const third = await identities.list(org, { limit: 2, cursor: second.next_cursor! });
    expect(first.data.map((i) => i.id)).toEqual(newestFirst.slice(0, 2));
    expect(second.data.map((i) => i.id)).toEqual(newestFirst.slice(2, 4));
    expect(third.data.map((i) => i.id)).toEqual(newestFirst.slice(4));
    expect(third.next_cursor).toBeNull();

    expect(await identities.list(org, { external_id: 'list_3' })).toEqual({
      data: [expect.objectContaining({ id: made[3], external_id: 'list_3' })],
      next_cursor: null,
    });
    expect(await identities.list(org, { external_id: 'nobody' })).toEqual({ data: [], next_cursor: null });
  });

  it('refuses to delete an identity live keys name (identity_in_use), and deletes it once none does', async () => {
    const keys = context.get(ApiKeyLifecycleService);
    const identity = await identities.create(a, { external_id: externalId('in-use') }, origin);
    const first = await keys.create(
      a,
      { name: 'first', role: 'viewer', type: 'service', identity_id: identity.id },
      origin,
    );
    const second = await keys.create(
      a,
      { name: 'second', role: 'viewer', type: 'service', identity_id: identity.id },
      origin,
    );
    expect((await identities.get(a, identity.id)).key_count).toBe(2);

    await expect(identities.delete(a, identity.id, origin)).rejects.toMatchObject({
      code: 'identity_in_use',
    });
    await keys.update(a, first.id, { identity_id: null }, origin);
    await expect(identities.delete(a, identity.id, origin)).rejects.toMatchObject({
      code: 'identity_in_use',
    });
    expect(await identities.get(a, identity.id)).toMatchObject({ id: identity.id, key_count: 1 });
    expect(await auditedIdentities(a, 'identity.deleted')).not.toContain(identity.id);

    // A deleted key no longer counts; deleting the identity clears the deleted key's reference.
    await keys.delete(a, second.id, origin);
    expect((await identities.get(a, identity.id)).key_count).toBe(0);
    await identities.delete(a, identity.id, origin);
    await expect(identities.get(a, identity.id)).rejects.toMatchObject({ code: 'not_found' });
    await expect(identities.delete(a, identity.id, origin)).rejects.toMatchObject({ code: 'not_found' });
    expect(await auditedIdentities(a, 'identity.deleted')).toContain(identity.id);
    const [row] = await context
      .get(DataSource)
      .query<{ identity_id: string | null }[]>(`SELECT identity_id FROM api_keys WHERE id = $1`, [second.id]);
    expect(row).toEqual({ identity_id: null });
  });

  it("refuses a key naming another organization's identity (unknown_identity), and creates no key", async () => {
    const keys = context.get(ApiKeyLifecycleService);
    const theirs = await identities.create(b, { external_id: externalId('theirs') }, origin);
    await expect(
      keys.create(a, { name: 'borrowed', role: 'viewer', type: 'service', identity_id: theirs.id }, origin),
    ).rejects.toMatchObject({ code: 'unknown_identity' });
    expect((await identities.get(b, theirs.id)).key_count).toBe(0);
    const [{ n }] = await context
      .get(DataSource)
      .query<{ n: number }[]>(
        `SELECT count(*)::int AS n FROM api_keys WHERE identity_id = $1 OR (organization_id = $2 AND name = 'borrowed')`,
        [theirs.id, a.organizationId],
      );
    expect(n).toBe(0);
  });
});
