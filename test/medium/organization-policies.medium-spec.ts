import { DataSource } from 'typeorm';
import type { Principal } from '../../src/access/principal';
import { AccountsModule } from '../../src/accounts/accounts.module';
import { AuditService } from '../../src/audit/audit.service';
import { hasSqlState } from '../../src/database/database-errors';
import type { UpdateOrganizationPoliciesDto } from '../../src/organization-policies/dto/organization-policies.dto';
import { OrganizationPoliciesModule } from '../../src/organization-policies/organization-policies.module';
import {
  DEFAULT_KEY_POLICY,
  OrganizationPoliciesService,
} from '../../src/organization-policies/organization-policies.service';
import { ServiceContext, startFeatureContext } from '../support/feature-context';
import { ManualClock } from '../support/manual-clock';
import { nextMillisecond } from '../support/pagination';
import { administratorOf } from '../support/principals';

const origin = { ip: '127.0.0.1', userAgent: 'medium-spec' };
const DAY_MS = 86_400_000;
const DEFAULTS = { leak_response: 'revoke', max_key_lifetime_days: null, require_expiration: false };

/**
 * An organization's key policies through OrganizationPoliciesService on a real database, without HTTP:
 * the defaults while no row is stored, a change that sets only what it names (audited), scoped to the
 * organization, and the expirations the policy refuses (policy_violation). The policies' foreign key
 * needs the organizations of the accounts module. Body validation is test/organization-policies.e2e-spec.ts's;
 * here, what the database itself refuses of a value that got past it.
 */
describe('organization policies (service level)', () => {
  let context: ServiceContext;
  let policies: OrganizationPoliciesService;
  const clock = new ManualClock(Date.parse('2030-01-15T12:00:00.000Z'));

  beforeAll(async () => {
    context = await startFeatureContext({ imports: [OrganizationPoliciesModule, AccountsModule], clock });
    policies = context.get(OrganizationPoliciesService);
  });
  afterAll(() => context?.close());

  const storedRows = async (organizationId: string): Promise<Record<string, unknown>[]> =>
    context
      .get(DataSource)
      .query(
        `SELECT leak_response, max_key_lifetime_days, require_expiration FROM organization_policies WHERE organization_id = $1`,
        [organizationId],
      );

  const policyAudits = async (principal: Principal) =>
    (
      await context
        .get(AuditService)
        .list(principal.organizationId, { action: 'organization.policies_updated', limit: 100 })
    ).data;

  it('has the defaults while no policy is stored, and reading them stores none', async () => {
    const org = await administratorOf(context, 'PoliciesDefaults');
    expect(await policies.get(org)).toEqual(DEFAULTS);
    expect(await policies.forOrganization(org.organizationId)).toEqual({
      leakResponse: 'revoke',
      maxKeyLifetimeDays: null,
      requireExpiration: false,
    });
    expect(await storedRows(org.organizationId)).toEqual([]);
  });

  it('sets only the fields a change names, reads them back, and removes the limit with null', async () => {
    const org = await administratorOf(context, 'PoliciesSet');
    expect(await policies.update(org, { max_key_lifetime_days: 90 }, origin)).toEqual({
      ...DEFAULTS,
      max_key_lifetime_days: 90,
    });
    expect(await storedRows(org.organizationId)).toEqual([
      { leak_response: 'revoke', max_key_lifetime_days: 90, require_expiration: false },
    ]);
    expect(
      await policies.update(org, { leak_response: 'disable', require_expiration: true }, origin),
    ).toEqual({ leak_response: 'disable', max_key_lifetime_days: 90, require_expiration: true });
    expect(await policies.update(org, { max_key_lifetime_days: null }, origin)).toEqual({
      leak_response: 'disable',
      max_key_lifetime_days: null,
      require_expiration: true,
    });
    // An empty change changes nothing.
    expect(await policies.update(org, {}, origin)).toEqual({
      leak_response: 'disable',
      max_key_lifetime_days: null,
      require_expiration: true,
    });
    expect(await policies.get(org)).toEqual({
      leak_response: 'disable',
      max_key_lifetime_days: null,
      require_expiration: true,
    });
    expect(await policies.forOrganization(org.organizationId)).toEqual({
      leakResponse: 'disable',
      maxKeyLifetimeDays: null,
      requireExpiration: true,
    });
  });

  it('audits each change as organization.policies_updated, with what changed from what', async () => {
    const org = await administratorOf(context, 'PoliciesAudit');
    await policies.update(org, { leak_response: 'notify' }, origin);
    // Audit entries list newest first by the millisecond: keep the two changes' apart.
    await nextMillisecond();
    await policies.update(org, { leak_response: 'notify', max_key_lifetime_days: 30 }, origin);
    const entries = await policyAudits(org);
    expect(entries.map((entry) => entry.details)).toEqual([
      {
        changes: { max_key_lifetime_days: { from: null, to: 30 } },
        policies: { leak_response: 'notify', max_key_lifetime_days: 30, require_expiration: false },
      },
      {
        changes: { leak_response: { from: 'revoke', to: 'notify' } },
        policies: { leak_response: 'notify', max_key_lifetime_days: null, require_expiration: false },
      },
    ]);
    expect(entries[0]).toMatchObject({ actorType: 'user', actorId: org.userId });
  });

  it('scopes the policies to the organization: another one keeps its own (or the defaults)', async () => {
    const a = await administratorOf(context, 'PoliciesScopeA');
    const b = await administratorOf(context, 'PoliciesScopeB');
    const c = await administratorOf(context, 'PoliciesScopeC');
    await policies.update(a, { leak_response: 'notify', max_key_lifetime_days: 7 }, origin);
    await policies.update(c, { require_expiration: true }, origin);

    expect(await policies.get(b)).toEqual(DEFAULTS);
    expect(await storedRows(b.organizationId)).toEqual([]);
    expect(await policies.get(a)).toEqual({
      leak_response: 'notify',
      max_key_lifetime_days: 7,
      require_expiration: false,
    });
    expect(await policies.get(c)).toEqual({ ...DEFAULTS, require_expiration: true });
    expect(await policyAudits(b)).toEqual([]);

    const all = await policies.forOrganizations([a.organizationId, b.organizationId, c.organizationId]);
    expect([...all.entries()]).toEqual([
      [a.organizationId, { leakResponse: 'notify', maxKeyLifetimeDays: 7, requireExpiration: false }],
      [b.organizationId, DEFAULT_KEY_POLICY],
      [c.organizationId, { leakResponse: 'revoke', maxKeyLifetimeDays: null, requireExpiration: true }],
    ]);
  });

  it.each<[string, UpdateOrganizationPoliciesDto]>([
    ['an unknown leak_response', { leak_response: 'delete' as never, require_expiration: true }],
    ['a lifetime of 0 days', { max_key_lifetime_days: 0, leak_response: 'notify' }],
    ['a lifetime over 3650 days', { max_key_lifetime_days: 3651, require_expiration: true }],
  ])(
    'the database refuses %s that got past the body validation, and nothing of the change is kept',
    async (_label, dto) => {
      const org = await administratorOf(context, 'PoliciesInvalid');
      await policies.update(org, { leak_response: 'disable', max_key_lifetime_days: 30 }, origin);
      const refused: unknown = await policies.update(org, dto, origin).then(
        () => 'stored',
        (error: unknown) => error,
      );
      expect(hasSqlState(refused, '23514')).toBe(true); // check_violation
      expect(await policies.get(org)).toEqual({
        leak_response: 'disable',
        max_key_lifetime_days: 30,
        require_expiration: false,
      });
      expect(await policyAudits(org)).toHaveLength(1);
    },
  );

  describe('expirations (policy_violation)', () => {
    let org: Principal;
    beforeAll(async () => {
      org = await administratorOf(context, 'PoliciesExpiration');
    });

    const allowed = (expiration: Date | null) =>
      policies.assertExpirationAllowed(org.organizationId, expiration);
    const daysAhead = (days: number, ms = 0) => new Date(clock.now() + days * DAY_MS + ms);

    it('allows any expiration, or none, under the defaults', async () => {
      await expect(allowed(null)).resolves.toBeUndefined();
      await expect(allowed(daysAhead(10_000))).resolves.toBeUndefined();
    });

    it('with require_expiration, refuses a key without one', async () => {
      await policies.update(org, { require_expiration: true }, origin);
      await expect(allowed(null)).rejects.toMatchObject({
        code: 'policy_violation',
        errors: [{ field: 'expiration', message: 'keys must have an expiration' }],
        extensions: { rule: 'require_expiration', max_key_lifetime_days: null },
      });
      await expect(allowed(daysAhead(10_000))).resolves.toBeUndefined();
    });

    it('with max_key_lifetime_days, refuses none and one further ahead, to the millisecond', async () => {
      await policies.update(org, { require_expiration: false, max_key_lifetime_days: 90 }, origin);
      await expect(allowed(null)).rejects.toMatchObject({
        code: 'policy_violation',
        errors: [{ field: 'expiration', message: 'keys must expire within 90 days' }],
        extensions: { rule: 'max_key_lifetime_days', max_key_lifetime_days: 90 },
      });
      await expect(allowed(daysAhead(90))).resolves.toBeUndefined();
      await expect(allowed(daysAhead(90, 1))).rejects.toMatchObject({
        code: 'policy_violation',
        errors: [{ field: 'expiration', message: 'expiration must be at most 90 days ahead' }],
        extensions: { rule: 'max_key_lifetime_days', max_key_lifetime_days: 90 },
      });
      // The window is counted from the service's clock, not from when the policy was set.
      clock.advance(10 * DAY_MS);
      await expect(allowed(daysAhead(90))).resolves.toBeUndefined();
      await expect(allowed(daysAhead(90, 1))).rejects.toMatchObject({ code: 'policy_violation' });
    });

    it("holds an organization's rule to itself: another organization's keys are not refused", async () => {
      const other = await administratorOf(context, 'PoliciesExpirationOther');
      await expect(policies.assertExpirationAllowed(other.organizationId, null)).resolves.toBeUndefined();
      await expect(allowed(null)).rejects.toMatchObject({ code: 'policy_violation' });
    });
  });
});
