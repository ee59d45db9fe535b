import { DataSource, EntityManager } from 'typeorm';
import { DomainEvent } from '../../src/events/event.entity';
import { EventsService, NewEvent } from '../../src/events/events.service';
import { ServiceContext, startFeatureContext } from '../support/feature-context';
import { nextMillisecond } from '../support/pagination';
import { HAS_POSTGRES } from '../support/instances';
import { testId } from '../support/principals';

/**
 * The outbox (EventsService) on a real database, with the platform alone: events commit with the change
 * that causes them, carry a secret only sealed, and are claimed for dispatch oldest first, once.
 */
describe('event outbox (service level)', () => {
  let context: ServiceContext;
  let events: EventsService;
  let dataSource: DataSource;

  beforeAll(async () => {
    context = await startFeatureContext({ imports: [] });
    events = context.get(EventsService);
    dataSource = context.get(DataSource);
  });
  afterAll(() => context?.close());

  const stored = (organizationId: string): Promise<DomainEvent[]> =>
    dataSource.getRepository(DomainEvent).find({ where: { organizationId }, order: { createdAt: 'ASC' } });
  const record = (...batch: NewEvent[]): Promise<void> =>
    dataSource.transaction((manager) => events.record(manager, batch));
  /** Claims in a transaction of its own, as fan-out does, and marks what it claimed dispatched. */
  const dispatch = (limit = 100): Promise<string[]> =>
    dataSource.transaction(async (manager) => {
      const claimed = await events.claimUndispatched(manager, limit);
      await events.markDispatched(
        manager,
        claimed.map((event) => event.id),
      );
      return claimed.map((event) => event.id);
    });
  const drain = async (): Promise<void> => {
    while ((await dispatch()).length) {
      /* what earlier tests left undispatched */
    }
  };

  it('commits events with the change that causes them, or not at all', async () => {
    const org = testId('org');
    await record({ organizationId: org, type: 'key.created', data: { key_id: 'key_1' } });
    await expect(
      dataSource.transaction(async (manager: EntityManager) => {
        await events.record(manager, [
          { organizationId: org, type: 'key.deleted', data: { key_id: 'key_1' } },
        ]);
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    expect((await stored(org)).map((event) => [event.type, event.data, event.dispatchedAt])).toEqual([
      ['key.created', { key_id: 'key_1' }, null],
    ]);
  });

  it('keeps a secret the event carries only sealed, and opens it for delivery', async () => {
    const org = testId('org');
    const secret = 'sk_the_new_value_of_a_policy_rotation';
    await record(
      { organizationId: org, type: 'key.rotated', data: { key_id: 'key_2' }, secret },
      { organizationId: org, type: 'key.created', data: { key_id: 'key_3' } },
    );
    const byType = new Map((await stored(org)).map((event) => [event.type, event]));
    const [rotated, created] = [byType.get('key.rotated')!, byType.get('key.created')!];
    expect(JSON.stringify(rotated)).not.toContain(secret);
    expect(rotated.sealedSecret).toEqual(expect.any(String));
    expect(events.openSecret(rotated)).toBe(secret);
    expect(created.sealedSecret).toBeNull();
    expect(events.openSecret(created)).toBeUndefined();
  });

  it('hands undispatched events out oldest first and once; an event to one receiver is never handed out', async () => {
    await drain();
    const org = testId('org');
    for (const n of [1, 2, 3]) {
      await record({ organizationId: org, type: 'key.created', data: { n } });
      await nextMillisecond();
    }
    const ping = await dataSource.transaction((manager) =>
      events.recordDirect(manager, { organizationId: org, type: 'ping', data: {} }),
    );
    expect(ping.dispatchedAt).toEqual(expect.any(Date));

    const ids = (await stored(org)).filter((event) => event.type !== 'ping').map((event) => event.id);
    expect(await dispatch(2)).toEqual(ids.slice(0, 2));
    expect(await dispatch()).toEqual(ids.slice(2));
    expect(await dispatch()).toEqual([]);
    expect((await stored(org)).every((event) => event.dispatchedAt !== null)).toBe(true);
    expect(await events.find(ping.id)).toMatchObject({ type: 'ping', organizationId: org });
  });

  // Two dispatchers at once need two connections: PGlite serves one (the second would wait for the first).
  (HAS_POSTGRES ? it : it.skip)('lets a second dispatcher skip the events another one holds', async () => {
    await drain();
    const org = testId('org');
    for (const n of [1, 2]) {
      await record({ organizationId: org, type: 'key.created', data: { n } });
      await nextMillisecond();
    }
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let claimed!: (ids: string[]) => void;
    const firstClaim = new Promise<string[]>((resolve) => (claimed = resolve));
    // The first dispatcher claims one event and keeps its transaction open until the second has claimed.
    const holding = dataSource.transaction(async (manager) => {
      claimed((await events.claimUndispatched(manager, 1)).map((event) => event.id));
      await held;
    });
    const first = await Promise.race([firstClaim, holding.then(() => [])]);
    try {
      const second = await dataSource.transaction(async (manager) =>
        (await events.claimUndispatched(manager, 100)).map((event) => event.id),
      );
      const all = (await stored(org)).map((event) => event.id);
      expect(first).toEqual([all[0]]);
      expect(second).toEqual([all[1]]);
    } finally {
      release();
      await holding;
    }
  });
});
