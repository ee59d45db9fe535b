import type { Principal } from '../../src/access/principal';
import { UsersService } from '../../src/accounts/users.service';
import { ApiKeyValues } from '../../src/api-keys/api-key-format';
import { ApiKeysRepository } from '../../src/api-keys/api-keys.repository';
import { ApiKeyLifecycleService } from '../../src/api-keys/api-key-lifecycle.service';
import { ApiKeyQueryService } from '../../src/api-keys/api-key-query.service';
import { ApiKeyRotationService } from '../../src/api-keys/api-key-rotation.service';
import { CreditLedger } from '../../src/api-keys/credits/credit-ledger';
import { CreditsService } from '../../src/api-keys/credits/credits.service';
import { KeyPermissions } from '../../src/api-keys/key-permissions';
import { builtInRolePermissions, Permission } from '../../src/roles/permissions';
import { RolesService } from '../../src/roles/roles.service';
import { administratorOf as administratorOfOrganization } from '../support/principals';
import { AgentsModule } from '../../src/agents/agents.module';
import { ApiKeysModule } from '../../src/api-keys/api-keys.module';
import { ServiceContext, startFeatureContext } from '../support/feature-context';

/** Keys, roles and their holders through the real services and a real database, without HTTP. */
describe('API keys and roles (service level)', () => {
  let context: ServiceContext;
  let keys: ApiKeyLifecycleService;
  let queries: ApiKeyQueryService;
  let rotation: ApiKeyRotationService;
  const origin = { ip: '127.0.0.1', userAgent: 'medium-spec' };

  const administratorOf = (label: string): Promise<Principal> => administratorOfOrganization(context, label);

  beforeAll(async () => {
    // AgentsModule declares the agents:* permissions a custom role below grants: a permission is known
    // once the module that declares it is loaded.
    context = await startFeatureContext({ imports: [ApiKeysModule, AgentsModule] });
    keys = context.get(ApiKeyLifecycleService);
    queries = context.get(ApiKeyQueryService);
    rotation = context.get(ApiKeyRotationService);
  });
  afterAll(() => context.close());

  it('scopes every read and change by organization', async () => {
    const a = await administratorOf('Alpha');
    const b = await administratorOf('Beta');
    const created = await keys.create(a, { name: 'alpha key', role: 'viewer', type: 'service' }, origin);

    expect((await queries.get(a, created.id)).name).toBe('alpha key');
    expect(await context.get(ApiKeysRepository).findInOrganization(b.organizationId, created.id)).toBeNull();
    await expect(queries.get(b, created.id)).rejects.toMatchObject({ code: 'not_found' });
    await expect(keys.update(b, created.id, { name: 'stolen' }, origin)).rejects.toMatchObject({
      code: 'not_found',
    });
    await expect(keys.delete(b, created.id, origin)).rejects.toMatchObject({ code: 'not_found' });
    expect((await queries.list(b, {})).data).toEqual([]);
    expect((await queries.list(a, { type: 'service' })).data.map((k) => k.id)).toEqual([created.id]);
    expect((await queries.list(a, { type: 'team' })).data).toEqual([]);
  });

  it('finds a key by the hash of its current value, and of its previous one after a rotation', async () => {
    const a = await administratorOf('Gamma');
    const repository = context.get(ApiKeysRepository);
    const created = await keys.create(a, { name: 'rotating', role: 'viewer', type: 'service' }, origin);
    const rotated = await rotation.rotate(a, created.id, { grace_period_seconds: 60 }, origin);
    const hash = (value: string): string => context.get(ApiKeyValues).hash(value);
    expect(await repository.findByValueHash(hash(rotated.key))).toMatchObject({ matchedPrevious: false });
    expect(await repository.findByValueHash(hash(created.key))).toMatchObject({ matchedPrevious: true });
    await keys.delete(a, created.id, origin);
    expect(await repository.findByValueHash(hash(rotated.key))).toBeNull();
  });

  it('refuses to delete a role a user or a live key holds, and deletes it once nothing does', async () => {
    const a = await administratorOf('Delta');
    const roles = context.get(RolesService);
    await roles.create(a, { role_name: 'reader', permissions: { agents: ['read'] } }, origin);
    const key = await keys.create(a, { name: 'reader key', role: 'reader', type: 'service' }, origin);
    await expect(roles.delete(a, 'reader', origin)).rejects.toMatchObject({ code: 'role_in_use' });
    await keys.delete(a, key.id, origin);

    const users = context.get(UsersService);
    const user = await users.create(
      a,
      {
        email: `reader-${Date.now()}@example.test`,
        password: 'a-long-enough-password',
        name: 'Reader',
        role: 'reader',
      },
      origin,
    );
    await expect(roles.delete(a, 'reader', origin)).rejects.toMatchObject({ code: 'role_in_use' });
    await users.update(a, user.id, { role: 'viewer' }, origin);
    await roles.delete(a, 'reader', origin);
    expect(await roles.permissionsOf(a.organizationId, 'reader')).toBeUndefined();
  });

  it("narrows a personal key to its owner's permissions, and empties it when the owner is deactivated", async () => {
    const a = await administratorOf('Epsilon');
    const users = context.get(UsersService);
    const owner = await users.create(
      a,
      {
        email: `owner-${Date.now()}@example.test`,
        password: 'a-long-enough-password',
        name: 'Owner',
        role: 'developer',
      },
      origin,
    );
    const ownerPrincipal: Principal = {
      kind: 'user',
      organizationId: a.organizationId,
      userId: owner.id,
      apiKeyId: null,
      role: 'developer',
      permissions: builtInRolePermissions('developer'),
    };
    const personal = await keys.create(ownerPrincipal, { name: 'mine', role: 'developer' }, origin);
    const row = (await context.get(ApiKeysRepository).findInOrganization(a.organizationId, personal.id))!;
    const grants = context.get(KeyPermissions);

    expect([...(await grants.of([row]))[0].permissions].sort()).toEqual(
      [...builtInRolePermissions('developer')].sort(),
    );
    await users.update(a, owner.id, { role: 'viewer' }, origin);
    const narrowed = (await grants.of([row]))[0];
    expect([...narrowed.permissions].sort()).toEqual([...builtInRolePermissions('viewer')].sort());
    expect(narrowed.permissions.has('agents:create' as Permission)).toBe(false);

    await users.deactivate(a, owner.id, origin);
    expect((await grants.of([row]))[0]).toEqual({ permissions: new Set(), ownerActive: false });
  });

  it('spends the concurrent reservations of one balance in one ledger call, each all or none, in order', async () => {
    const a = await administratorOf('Reserved');
    const created = await keys.create(
      a,
      { name: 'credited', role: 'viewer', type: 'service', credits: { remaining: 7 } },
      origin,
    );
    const holder = (await context.get(ApiKeysRepository).findInOrganization(a.organizationId, created.id))!;
    const credits = context.get(CreditsService);
    const reserve = jest.spyOn(context.get(CreditLedger), 'reserve');
    try {
      // Five in one turn of the event loop, nine credits of seven: the group's reserve is refused, so each
      // is tried alone, in order: the first three are granted, the fourth finds 1 left and is refused,
      // the last takes that credit.
      const outcomes = await Promise.all([2, 2, 2, 2, 1].map((count) => credits.spendAtOnce(holder, count)));
      expect(outcomes.map((outcome) => outcome?.remaining ?? null)).toEqual([5, 3, 1, null, 0]);
      expect(reserve.mock.calls.map(([, count]) => count)).toEqual([9, 2, 2, 2, 2, 1]);

      // Covered as a whole: one call for all of them, each told the balance after its own share.
      const refilled = await keys.update(a, created.id, { credits: { remaining: 10 } }, origin);
      expect(refilled.credits).toMatchObject({ remaining: 10 });
      const reloaded = (await context
        .get(ApiKeysRepository)
        .findInOrganization(a.organizationId, created.id))!;
      reserve.mockClear();
      const covered = await Promise.all([3, 1, 2].map((count) => credits.spendAtOnce(reloaded, count)));
      expect(covered.map((outcome) => outcome?.remaining)).toEqual([7, 6, 4]);
      expect(reserve.mock.calls.map(([account, count]) => [account.keyId, count])).toEqual([[created.id, 6]]);
      expect((await queries.get(a, created.id)).credits).toMatchObject({ remaining: 4 });
    } finally {
      reserve.mockRestore();
    }
  });
});
