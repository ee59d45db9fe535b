import { DataSource } from 'typeorm';
import {
  AuditService,
  MAX_WAITING_AUDIT_ENTRIES,
  StampedEvent,
  SYSTEM_ACTOR,
} from '../../src/audit/audit.service';
import { newId } from '../../src/common/ids';
import { AUDIT_ENTRY_ID } from '../../src/audit/audit.declarations';
import { MetricsService } from '../../src/metrics/metrics.service';
import { MAX_REFUSALS } from '../../src/database/write-backlog';
import { UsageCounter } from '../../src/usage/usage-counter';
import { UsageRepository } from '../../src/usage/usage.repository';
import { UsageModule } from '../../src/usage/usage.module';
import { ServiceContext, startFeatureContext } from '../support/feature-context';

/**
 * What waits in memory for the database, on a real one: audit entries and usage counters written
 * while it cannot be reached are kept (at most a bounded number, the rest dropped and counted),
 * exported as metrics, and written in order once it can; a write retried after an unknown outcome is
 * not written twice; a batch the database refuses although it answers is dropped after a few tries.
 * "Cannot be reached" is the application's own pool closed (DataSource.destroy, then initialize
 * again: what the writes meet at shutdown); "refuses" is a CHECK (false) constraint, NOT VALID so
 * that existing rows are not checked. Both are the real driver and server, not mocks.
 */
describe('writes waiting for the database (service level)', () => {
  let context: ServiceContext;
  let dataSource: DataSource;
  let audit: AuditService;
  let metrics: MetricsService;

  beforeAll(async () => {
    context = await startFeatureContext({ imports: [UsageModule] });
    dataSource = context.get(DataSource);
    audit = context.get(AuditService);
    metrics = context.get(MetricsService);
  });
  afterAll(() => context?.close());

  const unreachable = () => dataSource.destroy();
  const reachable = () => dataSource.initialize();
  const refuseWrites = (table: string) =>
    dataSource.query(`ALTER TABLE ${table} ADD CONSTRAINT writes_refused CHECK (false) NOT VALID`);
  const acceptWrites = (table: string) =>
    dataSource.query(`ALTER TABLE ${table} DROP CONSTRAINT writes_refused`);
  const metric = async (name: string): Promise<number> => {
    const found = metrics.registry.getSingleMetric(name);
    if (!found) throw new Error(`no metric ${name}`);
    return (await found.get()).values[0]?.value ?? 0;
  };
  const denial = (organizationId: string, n: number) => ({
    organizationId,
    action: 'key.denied' as const,
    actor: SYSTEM_ACTOR,
    details: { n },
  });

  it('keeps audit entries while the database is unreachable, up to MAX_WAITING_AUDIT_ENTRIES, exports the count and the overflow, and writes them in order with the chain intact', async () => {
    const organizationId = 'org_backlog_audit';
    await unreachable();
    try {
      for (let n = 0; n < MAX_WAITING_AUDIT_ENTRIES + 5; n++) audit.enqueue(denial(organizationId, n));
      await audit.flush();
      expect(await metric('gatehouse_audit_entries_waiting')).toBe(MAX_WAITING_AUDIT_ENTRIES);
      expect(await metric('gatehouse_audit_entries_dropped_total')).toBe(5);
    } finally {
      await reachable();
    }
    await audit.flush();

    const rows = await dataSource.query<{ n: number }[]>(
      `SELECT (details->>'n')::int AS n FROM audit_entries WHERE organization_id = $1 ORDER BY sequence`,
      [organizationId],
    );
    expect(rows.map((row) => row.n)).toEqual([...Array(MAX_WAITING_AUDIT_ENTRIES).keys()]);
    expect(await audit.verifyChain(organizationId)).toMatchObject({
      valid: true,
      entries: MAX_WAITING_AUDIT_ENTRIES,
      first_invalid_id: null,
    });
    expect(await metric('gatehouse_audit_entries_waiting')).toBe(0);
    expect(await metric('gatehouse_audit_entries_dropped_total')).toBe(5);
  });

  it('drops a batch of audit entries the database keeps refusing, after MAX_REFUSALS tries, and writes the next ones', async () => {
    const organizationId = 'org_backlog_refused';
    const droppedBefore = await metric('gatehouse_audit_entries_dropped_total');
    await refuseWrites('audit_entries');
    try {
      for (let n = 0; n < 3; n++) audit.enqueue(denial(organizationId, n));
      for (let i = 0; i < MAX_REFUSALS && audit.backlog.waiting; i++) await audit.flush();
      expect(await metric('gatehouse_audit_entries_waiting')).toBe(0);
      expect(await metric('gatehouse_audit_entries_dropped_total')).toBe(droppedBefore + 3);
    } finally {
      await acceptWrites('audit_entries');
    }
    audit.enqueue(denial(organizationId, 3));
    await audit.flush();
    const rows = await dataSource.query<{ n: number }[]>(
      `SELECT (details->>'n')::int AS n FROM audit_entries WHERE organization_id = $1 ORDER BY sequence`,
      [organizationId],
    );
    expect(rows.map((row) => row.n)).toEqual([3]);
  });

  it('does not write twice audit entries whose first write committed, and keeps the chain valid', async () => {
    const organizationId = 'org_backlog_retry';
    const stamped = (n: number): StampedEvent => ({
      id: newId(AUDIT_ENTRY_ID),
      at: new Date(),
      event: denial(organizationId, n),
    });
    const first = [stamped(0), stamped(1)];
    await dataSource.transaction((manager) => audit.appendStamped(manager, first, false));
    // The retry of that write (its reply lost) with what was enqueued after it.
    await dataSource.transaction((manager) => audit.appendStamped(manager, [...first, stamped(2)], true));

    const rows = await dataSource.query<{ n: number }[]>(
      `SELECT (details->>'n')::int AS n FROM audit_entries WHERE organization_id = $1 ORDER BY sequence`,
      [organizationId],
    );
    expect(rows.map((row) => row.n)).toEqual([0, 1, 2]);
    expect(await audit.verifyChain(organizationId)).toMatchObject({ valid: true, entries: 3 });
  });

  it('keeps usage counters while the database is unreachable, exports them, and adds them once when it is back', async () => {
    const usage = context.get(UsageCounter);
    const repository = context.get(UsageRepository);
    const key = { id: 'key_backlog', identity: null };
    const counts = async (keyId: string) =>
      Object.fromEntries(
        (
          await repository.countsOfKey(
            'org_backlog_usage',
            keyId,
            'hour',
            new Date(0),
            new Date(Date.UTC(9999, 0)),
          )
        ).map((row) => [row.outcome, row.count]),
      );

    await unreachable();
    try {
      for (let i = 0; i < 7; i++) usage.count('org_backlog_usage', key, 'allowed');
      usage.count('org_backlog_usage', key, 'rate_limiter_unavailable');
      await usage.flush();
      usage.count('org_backlog_usage', key, 'allowed');
      await usage.flush();
      expect(await metric('gatehouse_usage_counters_waiting')).toBe(3);
    } finally {
      await reachable();
    }
    await usage.flush();
    expect(await counts('key_backlog')).toEqual({ allowed: 8, rate_limiter_unavailable: 1 });
    expect(await metric('gatehouse_usage_counters_waiting')).toBe(0);
    expect(await metric('gatehouse_usage_requests_dropped_total')).toBe(0);

    // A batch retried under its id after a commit whose reply was lost adds nothing the second time.
    const row = {
      organizationId: 'org_backlog_usage',
      keyId: 'key_retried',
      identityId: null,
      hour: Date.UTC(2030, 0, 1),
      outcome: 'allowed',
      count: 4,
    };
    await repository.add([row], 'batch-retried');
    await repository.add([row], 'batch-retried');
    expect(await counts('key_retried')).toEqual({ allowed: 4 });
  });
});
