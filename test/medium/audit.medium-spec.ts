import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { AuditRepository } from '../../src/audit/audit.repository';
import { ApiKeysModule } from '../../src/api-keys/api-keys.module';
import { AuditEvent, AuditService, SYSTEM_ACTOR } from '../../src/audit/audit.service';
import { ServiceContext, startFeatureContext } from '../support/feature-context';
import { nextMillisecond } from '../support/pagination';
import { testId } from '../support/principals';
import {
  forgeEntry,
  relinkWithoutKey,
  skipSequence,
  StoredEntry,
  storedEntries,
  writeLegacyEntries,
} from '../support/audit-tampering';
import type { ChainedRow } from '../../src/audit/audit.repository';
import { AuditError, AuditErrorCode } from '../../src/audit/audit.errors';

const user = { type: 'user' as const, id: 'usr_auditor' };
const PAGE_SIZE = 4;

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
    // Integrity checks read 4 entries a page: a chain of ten is three pages.
    context = await startFeatureContext({
      // The module that records the key actions these entries name declares them (AuditActions).
      imports: [ApiKeysModule],
      env: { AUDIT_DENIAL_WINDOW_SECONDS: '60', AUDIT_INTEGRITY_PAGE_SIZE: String(PAGE_SIZE) },
    });
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
    expect(await audit.verifyChain(org)).toMatchObject({ valid: true, entries: 5, first_invalid_id: null });

    await dataSource.query(`UPDATE audit_entries SET details = '{"n":99}' WHERE id = $1`, [entries[2].id]);
    expect(await audit.verifyChain(org)).toMatchObject({
      valid: false,
      entries: 5,
      first_invalid_id: entries[2].id,
      problem: 'entry_altered',
    });
    // Each organization's chain is its own.
    expect(await audit.verifyChain(other)).toMatchObject({ valid: true, entries: 3, first_invalid_id: null });
  });

  it('reports a removed entry at the one after it, which no longer links to its predecessor', async () => {
    const org = testId('org');
    for (let n = 0; n < 3; n++) await append(event(org, n));
    const entries = await chainOf(org);
    await dataSource.query(`DELETE FROM audit_entries WHERE id = $1`, [entries[1].id]);
    expect(await audit.verifyChain(org)).toMatchObject({
      valid: false,
      entries: 2,
      first_invalid_id: entries[2].id,
      problem: 'entry_altered',
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
    expect(await audit.verifyChain(org)).toMatchObject({ valid: true, entries: 1, first_invalid_id: null });
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

  describe('the keyed chain, against someone who can write to the database', () => {
    /** `count` entries of a new organization, a sequence number left free after each (for forgeries). */
    async function chain(count = 10): Promise<{ org: string; rows: StoredEntry[] }> {
      const org = testId('org');
      for (let n = 0; n < count; n++) {
        await append(event(org, n));
        await skipSequence(dataSource);
      }
      return { org, rows: await storedEntries(dataSource, org) };
    }
    /** The check, with the pages it read. */
    async function verified(org: string, checkpoint?: string) {
      const pageReads = jest.spyOn(context.get(AuditRepository), 'chainPage');
      try {
        const result = await audit.verifyChain(org, checkpoint);
        const pages = await Promise.all(
          pageReads.mock.results.map((read) => read.value as Promise<ChainedRow[]>),
        );
        return { result, pages: pages.map((page) => page.map((row) => row.id)) };
      } finally {
        pageReads.mockRestore();
      }
    }
    const head = async (org: string) =>
      (
        await dataSource.query<Record<string, string>[]>(
          `SELECT sequence::text AS sequence, entry_id, hash, mac FROM audit_chain_heads WHERE organization_id = $1`,
          [org],
        )
      )[0];
    const deleteEntries = (rows: StoredEntry[]) =>
      dataSource.query(`DELETE FROM audit_entries WHERE id = ANY($1)`, [rows.map((row) => row.id)]);

    it('reads the chain a page at a time, keyed, and signs a checkpoint of its end', async () => {
      // Sequence numbers across a power of ten, where pages ordered as text would put 1000 before 999.
      const [{ next }] = await dataSource.query<{ next: string }[]>(
        `SELECT nextval(pg_get_serial_sequence('audit_entries', 'sequence'))::text AS next`,
      );
      const power = 10n ** BigInt(String(BigInt(next) + 10n).length);
      await dataSource.query(`SELECT setval(pg_get_serial_sequence('audit_entries', 'sequence'), $1)`, [
        String(power - 6n),
      ]);
      const { org, rows } = await chain(10);
      expect(BigInt(rows[0].sequence) < power && BigInt(rows[9].sequence) > power).toBe(true);
      expect(rows.every((row) => row.keyed)).toBe(true);
      expect(await head(org)).toMatchObject({ entry_id: rows[9].id, sequence: rows[9].sequence });

      const { result, pages } = await verified(org);
      expect(result).toEqual({
        valid: true,
        entries: 10,
        legacy_entries: 0,
        first_invalid_id: null,
        problem: null,
        checkpoint: {
          entries: 10,
          entry_id: rows[9].id,
          created_at: rows[9].created_at.toISOString(),
          token: expect.stringMatching(/^c1\.10\./),
        },
      });
      expect(pages).toEqual([
        rows.slice(0, 4).map((row) => row.id),
        rows.slice(4, 8).map((row) => row.id),
        rows.slice(8).map((row) => row.id),
      ]);
    });

    it('names an entry edited on the second page, though every link after it was recomputed without the key', async () => {
      const { org, rows } = await chain(10);
      await dataSource.query(`UPDATE audit_entries SET details = '{"n":99}' WHERE id = $1`, [rows[5].id]);
      rows[5].details = { n: 99 };
      await relinkWithoutKey(dataSource, rows, 5);

      const { result, pages } = await verified(org);
      expect(result).toMatchObject({
        valid: false,
        entries: 10,
        first_invalid_id: rows[5].id,
        problem: 'entry_altered',
        checkpoint: null,
      });
      expect(pages).toHaveLength(3);
    });

    it('names an entry forged between two pages, linked as an old keyless entry or with a guessed key', async () => {
      for (const keyed of [false, true]) {
        const { org, rows } = await chain(10);
        const forged = await forgeEntry(dataSource, rows[3], {
          id: testId('aud'),
          sequence: String(BigInt(rows[3].sequence) + 1n),
          keyed,
        });
        // The entry after it is relinked to it, keylessly: all the attacker can do.
        await relinkWithoutKey(dataSource, [...rows.slice(0, 4), forged, ...rows.slice(4)], 5);
        expect((await verified(org)).result).toMatchObject({
          valid: false,
          entries: 11,
          first_invalid_id: forged.id,
          problem: 'entry_altered',
        });
      }
    });

    it('finds entries deleted in the middle at the one after them, and deleted at the end by the head', async () => {
      const middle = await chain(10);
      await deleteEntries(middle.rows.slice(4, 6));
      expect((await verified(middle.org)).result).toMatchObject({
        valid: false,
        entries: 8,
        first_invalid_id: middle.rows[6].id,
        problem: 'entry_altered',
      });

      const end = await chain(10);
      await deleteEntries(end.rows.slice(8));
      const { result, pages } = await verified(end.org);
      expect(result).toMatchObject({
        valid: false,
        entries: 8,
        first_invalid_id: null,
        problem: 'entries_missing',
        checkpoint: null,
      });
      expect(pages.flat()).toEqual(end.rows.slice(0, 8).map((row) => row.id));

      // Made to name the new last entry, the head needs a signature nobody without the key can make.
      await dataSource.query(
        `UPDATE audit_chain_heads SET sequence = $2, entry_id = $3, hash = $4, mac = $5 WHERE organization_id = $1`,
        [end.org, end.rows[7].sequence, end.rows[7].id, end.rows[7].hash, randomBytes(32).toString('hex')],
      );
      expect((await verified(end.org)).result).toMatchObject({ valid: false, problem: 'head_mismatch' });
      await dataSource.query(`DELETE FROM audit_chain_heads WHERE organization_id = $1`, [end.org]);
      expect((await verified(end.org)).result).toMatchObject({ valid: false, problem: 'head_mismatch' });
    });

    it('keeps a gap at the end visible after later entries, which follow the head and not the last row', async () => {
      const { org, rows } = await chain(6);
      await deleteEntries(rows.slice(4));
      await append(event(org, 6));
      const [after] = (await storedEntries(dataSource, org)).slice(4);
      expect(after.previous_hash).toBe(rows[5].hash);
      expect((await verified(org)).result).toMatchObject({
        valid: false,
        entries: 5,
        first_invalid_id: after.id,
        problem: 'entry_altered',
      });
      // Nor does a head found altered get signed again by the next append.
      const other = await chain(3);
      await dataSource.query(`UPDATE audit_chain_heads SET mac = $2 WHERE organization_id = $1`, [
        other.org,
        'f'.repeat(64),
      ]);
      await append(event(other.org, 3));
      expect((await verified(other.org)).result).toMatchObject({ valid: false, problem: 'head_mismatch' });
    });

    it('checks a checkpoint kept elsewhere: entries deleted past it show, even with an earlier head put back', async () => {
      const { org } = await chain(6);
      const earlierHead = await head(org);
      for (let n = 6; n < 10; n++) await append(event(org, n));
      const { checkpoint } = (await verified(org)).result;
      expect(checkpoint).toMatchObject({ entries: 10 });
      for (let n = 10; n < 12; n++) await append(event(org, n));
      expect((await verified(org, checkpoint!.token)).result).toMatchObject({ valid: true, entries: 12 });

      // Back to the first six entries, with the head they had then: every link and the head are sound,
      // which the database alone cannot tell from a log of six entries.
      const rows = await storedEntries(dataSource, org);
      await deleteEntries(rows.slice(6));
      await dataSource.query(
        `UPDATE audit_chain_heads SET sequence = $2, entry_id = $3, hash = $4, mac = $5 WHERE organization_id = $1`,
        [org, earlierHead.sequence, earlierHead.entry_id, earlierHead.hash, earlierHead.mac],
      );
      expect((await verified(org)).result).toMatchObject({ valid: true, entries: 6 });
      expect((await verified(org, checkpoint!.token)).result).toMatchObject({
        valid: false,
        entries: 6,
        first_invalid_id: null,
        problem: 'entries_missing',
        checkpoint: null,
      });
    });

    it('refuses a checkpoint it did not sign, or signed for another organization', async () => {
      const a = await chain(2);
      const b = await chain(2);
      const token = (await verified(a.org)).result.checkpoint!.token;
      const altered = token.replace(/^c1\.2\./, 'c1.1.');
      for (const [org, checkpoint] of [
        [a.org, altered],
        [b.org, token],
      ]) {
        const error = await audit.verifyChain(org, checkpoint).catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(AuditError);
        expect(error).toMatchObject({ code: AuditErrorCode.InvalidCheckpoint });
      }
    });

    it('verifies entries written before the key as the legacy start of the chain, pinned by the keyed ones after', async () => {
      const org = testId('org');
      await writeLegacyEntries(dataSource, org, 3);
      expect(await audit.verifyChain(org)).toMatchObject({ valid: true, entries: 3, legacy_entries: 3 });
      for (let n = 0; n < 3; n++) await append(event(org, n));
      const rows = await storedEntries(dataSource, org);
      expect(rows.map((row) => row.keyed)).toEqual([false, false, false, true, true, true]);
      expect(rows[3].previous_hash).toBe(rows[2].hash);
      const { result } = await verified(org);
      expect(result).toMatchObject({ valid: true, entries: 6, legacy_entries: 3, problem: null });

      // A legacy entry changed and the legacy links after it recomputed: the first keyed entry names the old one.
      await dataSource.query(`UPDATE audit_entries SET details = '{"legacy":99}' WHERE id = $1`, [
        rows[1].id,
      ]);
      rows[1].details = { legacy: 99 };
      await relinkWithoutKey(dataSource, rows.slice(0, 3), 1);
      expect(await audit.verifyChain(org)).toMatchObject({ valid: false, first_invalid_id: rows[3].id });

      // Keyed entries passed off as legacy ones: keyless links only ever start a chain.
      const second = await chain(4);
      await relinkWithoutKey(dataSource, second.rows, 2, { markLegacy: true });
      expect(await audit.verifyChain(second.org)).toMatchObject({
        valid: false,
        first_invalid_id: second.rows[2].id,
        problem: 'entry_altered',
      });

      // The whole chain rewritten as a legacy one and its head deleted looks like a log from before the
      // key; a checkpoint kept elsewhere tells them apart.
      const third = await chain(4);
      const { checkpoint } = (await verified(third.org)).result;
      await relinkWithoutKey(dataSource, third.rows, 0, { markLegacy: true });
      await dataSource.query(`DELETE FROM audit_chain_heads WHERE organization_id = $1`, [third.org]);
      expect(await audit.verifyChain(third.org)).toMatchObject({ valid: true, legacy_entries: 4 });
      expect(await audit.verifyChain(third.org, checkpoint!.token)).toMatchObject({
        valid: false,
        first_invalid_id: third.rows[3].id,
        problem: 'checkpoint_mismatch',
      });
    });
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
