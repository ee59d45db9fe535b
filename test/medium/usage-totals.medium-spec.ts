import { UsageRepository } from '../../src/usage/usage.repository';
import { UsageModule } from '../../src/usage/usage.module';
import { ServiceContext, startFeatureContext } from '../support/feature-context';

const HOUR = Date.parse('2030-03-20T12:00:00Z');

/**
 * The totals behind GET /v1/usage (keys and group_by=identity) order by the number of requests as a
 * number: a key with 20 comes before one with 3, which text order would put first ('2' < '3').
 */
describe('usage totals order (service level)', () => {
  let context: ServiceContext;
  let usage: UsageRepository;

  beforeAll(async () => {
    context = await startFeatureContext({ imports: [UsageModule] });
    usage = context.get(UsageRepository);
    const increment = (keyId: string, identityId: string, count: number) => ({
      organizationId: 'org_totals',
      keyId,
      identityId,
      hour: HOUR,
      outcome: 'allowed',
      count,
    });
    await usage.add(
      [
        increment('key_a_three', 'idt_a_three', 3),
        increment('key_b_twenty', 'idt_b_twenty', 20),
        increment('key_c_hundred', 'idt_c_hundred', 100),
        increment('key_d_nine', 'idt_d_nine', 9),
      ].sort((a, b) => a.keyId.localeCompare(b.keyId)),
      'totals batch',
    );
  });
  afterAll(() => context?.close());

  const from = new Date(HOUR);
  const end = new Date(HOUR + 3_600_000);

  it('lists keys by requests as numbers, most first', async () => {
    const totals = await usage.totalsByKey('org_totals', from, end);
    expect(totals.map((row) => [row.keyId, row.requests])).toEqual([
      ['key_c_hundred', 100],
      ['key_b_twenty', 20],
      ['key_d_nine', 9],
      ['key_a_three', 3],
    ]);
  });

  it('lists identities by requests as numbers, most first', async () => {
    const totals = await usage.totalsByIdentity('org_totals', from, end);
    expect(totals.map((row) => [row.identityId, row.requests])).toEqual([
      ['idt_c_hundred', 100],
      ['idt_b_twenty', 20],
      ['idt_d_nine', 9],
      ['idt_a_three', 3],
    ]);
  });
});
