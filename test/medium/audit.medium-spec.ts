import { DataSource } from 'typeorm';
import { AuditRepository } from '../../src/audit/audit.repository';
import { AuditEvent, AuditService, SYSTEM_ACTOR } from '../../src/audit/audit.service';
import { ServiceContext, startFeatureContext } from '../support/feature-context';
import { nextMillisecond } from '../support/pagination';
import { testId } from '../support/principals';

const user = { type: 'user' as const, id: 'usr_auditor' };

/**
 * AuditService on a real database, with the platform alone (the audit log is part of it): each
 * organization's entries form a hash chain that appends never fork and that names the first entry
 * changed behind its back; entries commit with the change they record; refusals of a key are coalesced.
 * What waits while the database is unreachable is write-backlog.medium-spec.ts's.
 */
describe('audit log (service level)', () => {
  let context: ServiceContext;
  let audit: AuditService;
  let dataSource: DataSource;

  beforeAll(async () => {
    // A long denial window: only the test closes windows (closeDenialWindows), never the periodic job.
    context = await startFeatureContext({ imports: [], env: { AUDIT_DENIAL_WINDOW_SECONDS: '60' } });
    audit = context.get(AuditService);
    dataSource = context.get(DataSource);
  });
  afterAll(() => context?.close());

  const event = (organizationId: string, n: number, fields: Partial<AuditEvent> = {}): AuditEvent => ({
    organizationId,
    action: 'key.updated',
    actor: user,
    details: { n },
    ...fields,
  });
  /** One management change: its entries appended in its own transaction. */
  const append = (...events: AuditEvent[]): Promise<void> =>
    dataSource.transaction((manager) => audit.append(manager, events));
  const chainOf = (organizationId: string) => context.get(AuditRepository).chainOf(organizationId);

  it('chains the entries of an organization, and names the first one changed behind its back', async () => {
    const org = testId('org');
    const other = testId('org');
    for (let n = 0; n < 3; n++) {
      await append(event(org, n));
      await append(event(other, n));
    }
    await append(event(org, 3), event(org, 4));
    const entries = await chainOf(org);
    expect(entries.map((entry) => entry.details.n)).toEqual([0, 1, 2, 3, 4]);
    expect(entries[0].previousHash).toBe('0'.repeat(64));
    for (let i = 1; i < entries.length; i++) expect(entries[i].previousHash).toBe(entries[i - 1].hash);
    expect(await audit.verifyChain(org)).toEqual({ valid: true, entries: 5, first_invalid_id: null });

    await dataSource.query(`UPDATE audit_entries SET details = '{"n":99}' WHERE id = $1`, [entries[2].id]);
    expect(await audit.verifyChain(org)).toEqual({
      valid: false,
      entries: 5,
      first_invalid_id: entries[2].id,
    });
    // Each organization's chain is its own.
    expect(await audit.verifyChain(other)).toEqual({ valid: true, entries: 3, first_invalid_id: null });
  });

  it('reports a removed entry at the one after it, which no longer links to its predecessor', async () => {
    const org = testId('org');
    for (let n = 0; n < 3; n++) await append(event(org, n));
    const entries = await chainOf(org);
    await dataSource.query(`DELETE FROM audit_entries WHERE id = $1`, [entries[1].id]);
    expect(await audit.verifyChain(org)).toEqual({
      valid: false,
      entries: 2,
      first_invalid_id: entries[2].id,
    });
  });

  it('never forks a chain when changes of one organization append at the same time', async () => {
    const org = testId('org');
    const other = testId('org');
    await Promise.all(
      Array.from({ length: 12 }, (_, n) => append(event(org, n), event(n % 3 ? org : other, 100 + n))),
    );
    const entries = await chainOf(org);
    expect(entries).toHaveLength(20);
    expect(new Set(entries.map((entry) => entry.previousHash)).size).toBe(20);
    expect(await audit.verifyChain(org)).toMatchObject({ valid: true, entries: 20 });
    expect(await audit.verifyChain(other)).toMatchObject({ valid: true, entries: 4 });
  });

  it('writes nothing when the change it records rolls back', async () => {
    const org = testId('org');
    await expect(
      dataSource.transaction(async (manager) => {
        await audit.append(manager, [event(org, 0)]);
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    expect(await chainOf(org)).toEqual([]);
    await append(event(org, 1));
    expect(await audit.verifyChain(org)).toEqual({ valid: true, entries: 1, first_invalid_id: null });
  });

  it('records who acted and from where, and lists newest first, filtered by action and key', async () => {
    const org = testId('org');
    const origin = { ip: '203.0.113.7', userAgent: 'medium-spec' };
    await append(event(org, 0, { action: 'key.created', keyId: 'key_one', origin }));
    await nextMillisecond();
    await append(event(org, 1, { action: 'key.created', keyId: 'key_two' }));
    await nextMillisecond();
    await append(event(org, 2, { action: 'key.expired', keyId: 'key_one', actor: SYSTEM_ACTOR }));

    const all = (await audit.list(org, {})).data;
    expect(all.map((entry) => entry.details.n)).toEqual([2, 1, 0]);
    expect(all[2]).toMatchObject({
      actorType: 'user',
      actorId: user.id,
      ip: origin.ip,
      userAgent: origin.userAgent,
    });
    expect(all[0]).toMatchObject({ actorType: 'system', actorId: null, ip: null, userAgent: null });

    const n = async (query: object, keyId?: string) =>
      (await audit.list(org, query, keyId)).data.map((entry) => entry.details.n);
    expect(await n({ action: 'key.created' })).toEqual([1, 0]);
    expect(await n({ key_id: 'key_one' })).toEqual([2, 0]);
    expect(await n({ key_id: 'key_two', action: 'key.expired' })).toEqual([]);
    // A key's own log (GET /v1/api-keys/{id}/audit-log) wins over a key_id in the query.
    expect(await n({ key_id: 'key_two' }, 'key_one')).toEqual([2, 0]);
    expect((await audit.list(testId('org'), { key_id: 'key_one' })).data).toEqual([]);

    const first = await audit.list(org, { limit: 2 });
    const second = await audit.list(org, { limit: 2, cursor: first.next_cursor! });
    expect([...first.data, ...second.data].map((entry) => entry.details.n)).toEqual([2, 1, 0]);
    expect(second.next_cursor).toBeNull();
  });

  describe('refusals of a key (key.denied)', () => {
    // Windows are per key and reason: each test refuses a key of its own.
    const denial = (organizationId: string, reason = 'forbidden') => ({
      organizationId,
      keyId: `key_of_${organizationId}`,
      reason,
      actor: { type: 'api_key' as const, id: `key_of_${organizationId}` },
      details: { missing_permissions: ['api_keys:create'] },
    });
    const denied = async (organizationId: string) =>
      (await chainOf(organizationId)).map((entry) => ({
        reason: entry.details.reason,
        count: entry.details.count,
        missing: entry.details.missing_permissions,
      }));

    it('writes the first refusal at once and the rest of its window as one entry with their count', async () => {
      const org = testId('org');
      for (let i = 0; i < 5; i++) audit.recordDenial(denial(org));
      await audit.flush();
      expect(await denied(org)).toEqual([{ reason: 'forbidden', count: 1, missing: ['api_keys:create'] }]);

      // Not yet: the window (60 s here) is still open.
      audit.closeDenialWindows(false);
      await audit.flush();
      expect(await denied(org)).toHaveLength(1);

      audit.closeDenialWindows(true);
      await audit.flush();
      const entries = await chainOf(org);
      expect(entries.map((entry) => entry.details.count)).toEqual([1, 4]);
      expect(entries[1]).toMatchObject({
        action: 'key.denied',
        keyId: `key_of_${org}`,
        actorType: 'api_key',
        details: { first_at: expect.any(String), last_at: expect.any(String) },
      });
      expect(Date.parse(entries[1].details.last_at as string)).toBeGreaterThanOrEqual(
        Date.parse(entries[1].details.first_at as string),
      );
      expect(await audit.verifyChain(org)).toMatchObject({ valid: true, entries: 2 });
    });

    it('opens a window per reason, and a new one after a window closed', async () => {
      const org = testId('org');
      audit.recordDenial(denial(org, 'forbidden'));
      audit.recordDenial(denial(org, 'rate_limited'));
      audit.recordDenial(denial(org, 'rate_limited'));
      audit.closeDenialWindows(true);
      audit.recordDenial(denial(org, 'forbidden'));
      await audit.flush();
      expect((await denied(org)).map(({ reason, count }) => [reason, count])).toEqual([
        ['forbidden', 1],
        ['rate_limited', 1],
        ['rate_limited', 1],
        ['forbidden', 1],
      ]);
    });
  });
});
