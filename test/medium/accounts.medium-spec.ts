import { DataSource } from 'typeorm';
import type { Principal } from '../../src/access/principal';
import { AccountsModule } from '../../src/accounts/accounts.module';
import { AuditService } from '../../src/audit/audit.service';
import { OrganizationsService } from '../../src/accounts/organizations.service';
import { PasswordHasher } from '../../src/accounts/password-hasher';
import { TeamsService } from '../../src/accounts/teams.service';
import { UserLifecycle } from '../../src/accounts/user-lifecycle';
import type { User } from '../../src/accounts/user.entity';
import { UsersService } from '../../src/accounts/users.service';
import { UsersRepository } from '../../src/accounts/users.repository';
import type { Permission } from '../../src/roles/permissions';
import { RolesService } from '../../src/roles/roles.service';
import { ServiceContext, startFeatureContext } from '../support/feature-context';
import { nextMillisecond } from '../support/pagination';
import { administratorOf, testId } from '../support/principals';

const PASSWORD = 'a-long-enough-password';
const origin = { ip: '127.0.0.1', userAgent: 'medium-spec' };
let emails = 0;
const email = (label: string): string => `${label}-${++emails}-${Date.now()}@example.test`;

/**
 * Organizations, users and teams (the accounts module) on a real database: everything scoped to the
 * caller's organization, emails unique across the service, no acting above one's own permissions, and a
 * deactivation that commits with its consequences or not at all. Validation of request bodies and the
 * permissions the routes require are test/accounts.e2e-spec.ts's.
 */
describe('accounts (service level)', () => {
  let context: ServiceContext;
  let users: UsersService;
  let teams: TeamsService;

  beforeAll(async () => {
    context = await startFeatureContext({ imports: [AccountsModule] });
    users = context.get(UsersService);
    teams = context.get(TeamsService);
  });
  afterAll(() => context?.close());

  const newUser = (principal: Principal, role = 'viewer', label = 'member'): Promise<User> =>
    users.create(principal, { email: email(label), password: PASSWORD, name: label, role }, origin);

  describe('organizations', () => {
    // First, while the database has no user at all: what a first start of several instances does.
    it('bootstraps the first organization once, however many instances start at the same time', async () => {
      const organizations = context.get(OrganizationsService);
      expect(await organizations.hasAnyUser()).toBe(false);
      const first = { organizationName: 'First', email: email('first'), password: PASSWORD, name: 'First' };
      const made = await Promise.all([1, 2, 3].map(() => organizations.bootstrap(first)));
      expect(made.filter(Boolean)).toHaveLength(1);
      expect(made.find(Boolean)).toMatchObject({ email: first.email, role: 'administrator', active: true });
      expect(await organizations.hasAnyUser()).toBe(true);
      expect(await organizations.bootstrap({ ...first, email: email('second') })).toBeUndefined();
      const [{ n }] = await context
        .get(DataSource)
        .query<{ n: number }[]>(`SELECT count(*)::int AS n FROM organizations WHERE name = 'First'`);
      expect(n).toBe(1);
    });

    it('creates an organization with its administrator, the email trimmed and lower-cased', async () => {
      const { organization, user } = await context.get(OrganizationsService).createWithAdministrator({
        organizationName: 'Mixed',
        email: '  Mixed.Case@Example.TEST ',
        password: PASSWORD,
        name: 'Admin',
      });
      expect(user).toMatchObject({
        organizationId: organization.id,
        email: 'mixed.case@example.test',
        role: 'administrator',
        active: true,
        deactivatedAt: null,
      });
      expect(await context.get(PasswordHasher).verify(PASSWORD, user.passwordHash)).toBe(true);
      expect(await users.findByEmail('mixed.case@example.test')).toMatchObject({ id: user.id });
    });

    it('refuses an email already taken (email_taken), and leaves no organization behind', async () => {
      const taken = email('taken');
      const organizations = context.get(OrganizationsService);
      await organizations.createWithAdministrator({
        organizationName: 'Owner',
        email: taken,
        password: PASSWORD,
        name: 'A',
      });
      await expect(
        organizations.createWithAdministrator({
          organizationName: 'Orphan',
          email: taken,
          password: PASSWORD,
          name: 'B',
        }),
      ).rejects.toMatchObject({ code: 'email_taken' });
      const [{ n }] = await context
        .get(DataSource)
        .query<{ n: number }[]>(`SELECT count(*)::int AS n FROM organizations WHERE name = 'Orphan'`);
      expect(n).toBe(0);
    });
  });

  describe('users', () => {
    let a: Principal;
    let b: Principal;

    beforeAll(async () => {
      a = await administratorOf(context, 'UsersA');
      b = await administratorOf(context, 'UsersB');
    });

    it('refuses an email any organization already uses (email_taken), and creates nothing', async () => {
      const first = await newUser(a, 'viewer', 'dup');
      for (const principal of [a, b]) {
        await expect(
          users.create(
            principal,
            { email: first.email, password: PASSWORD, name: 'Second', role: 'viewer' },
            origin,
          ),
        ).rejects.toMatchObject({ code: 'email_taken' });
      }
      expect((await users.list(b, { limit: 100 })).data.map((u) => u.email)).not.toContain(first.email);
    });

    it("refuses a role the organization does not have, another organization's custom role too (unknown_role)", async () => {
      await context
        .get(RolesService)
        .create(b, { role_name: 'team_reader', permissions: { teams: ['read'] } }, origin);
      for (const role of ['superuser', 'team_reader']) {
        const refused = users.create(
          a,
          { email: email('role'), password: PASSWORD, name: 'x', role },
          origin,
        );
        await expect(refused).rejects.toMatchObject({
          code: 'unknown_role',
          errors: [{ field: 'role', message: expect.any(String) }],
        });
      }
      const member = await newUser(a);
      await expect(
        users.update(a, member.id, { role: 'team_reader', name: 'changed' }, origin),
      ).rejects.toMatchObject({
        code: 'unknown_role',
      });
      expect(await users.get(a, member.id)).toMatchObject({ role: 'viewer', name: 'member' });
    });

    it("hides an organization's users from every other organization, which changes nothing", async () => {
      const member = await newUser(a, 'developer');
      const attempts = [
        () => users.get(b, member.id),
        () => users.update(b, member.id, { name: 'taken over', role: 'viewer' }, origin),
        () => users.deactivate(b, member.id, origin),
        () => users.activate(b, member.id, origin),
      ];
      for (const attempt of attempts) await expect(attempt()).rejects.toMatchObject({ code: 'not_found' });
      expect((await users.list(b, { limit: 100 })).data.map((u) => u.id)).not.toContain(member.id);
      expect(await users.findMember(b.organizationId, member.id)).toBeNull();
      expect(await users.get(a, member.id)).toMatchObject({
        name: 'member',
        role: 'developer',
        active: true,
      });
    });

    it('answers not_found for an id that is not a user id', async () => {
      for (const id of [testId('usr'), 'team_0000000000000000000000', 'nope']) {
        await expect(users.get(a, id)).rejects.toMatchObject({ code: 'not_found' });
      }
    });

    describe('no acting above one’s own permissions', () => {
      let manager: Principal;
      let reader: User;

      beforeAll(async () => {
        // A custom role for users and teams only: less than a viewer or a developer holds.
        await context
          .get(RolesService)
          .create(a, { role_name: 'reader', permissions: { teams: ['read'] } }, origin);
        reader = await newUser(a, 'reader', 'reader');
        manager = {
          ...a,
          userId: (await newUser(a, 'administrator', 'manager')).id,
          role: 'user_manager',
          permissions: new Set<Permission>(['users:create', 'users:read', 'users:update', 'teams:read']),
        };
      });

      it('creates and changes users whose permissions it holds', async () => {
        const created = await users.create(
          manager,
          {
            email: email('ok'),
            password: PASSWORD,
            name: 'ok',
            role: 'reader',
          },
          origin,
        );
        await users.update(manager, created.id, { name: 'renamed' }, origin);
        await users.deactivate(manager, reader.id, origin);
        expect(await users.get(a, created.id)).toMatchObject({ name: 'renamed', role: 'reader' });
        await users.activate(manager, reader.id, origin);
      });

      it('refuses a user, a promotion or a change that would reach above it (privilege_escalation)', async () => {
        const admin = await newUser(a, 'administrator', 'target');
        const refusals = [
          () =>
            users.create(
              manager,
              {
                email: email('above'),
                password: PASSWORD,
                name: 'x',
                role: 'developer',
              },
              origin,
            ),
          () => users.update(manager, reader.id, { role: 'administrator' }, origin),
          () => users.update(manager, admin.id, { name: 'renamed' }, origin),
          () => users.update(manager, admin.id, { role: 'reader' }, origin),
          () => users.deactivate(manager, admin.id, origin),
        ];
        for (const refusal of refusals) {
          await expect(refusal()).rejects.toMatchObject({ code: 'privilege_escalation' });
        }
        expect(await users.get(a, admin.id)).toMatchObject({
          name: 'target',
          role: 'administrator',
          active: true,
        });
        expect(await users.get(a, reader.id)).toMatchObject({ role: 'reader' });
      });
    });

    it('changes a password: the new one verifies, the old one no longer does', async () => {
      const member = await newUser(a);
      const updated = await users.update(a, member.id, { password: 'a-brand-new-password' }, origin);
      const hasher = context.get(PasswordHasher);
      expect(await hasher.verify('a-brand-new-password', updated.passwordHash)).toBe(true);
      expect(await hasher.verify(PASSWORD, updated.passwordHash)).toBe(false);
    });

    describe('deactivation', () => {
      it('refuses to deactivate oneself (cannot_deactivate_self)', async () => {
        await expect(users.deactivate(a, a.userId!, origin)).rejects.toMatchObject({
          code: 'cannot_deactivate_self',
        });
        expect((await users.get(a, a.userId!)).active).toBe(true);
      });

      it('deactivates once, telling the listeners, and activates again', async () => {
        const member = await newUser(a, 'developer');
        const told: string[] = [];
        context.get(UserLifecycle).onDeactivated(async ({ userId }) => void told.push(userId));

        const deactivated = await users.deactivate(a, member.id, origin);
        expect(deactivated).toMatchObject({ active: false, deactivatedAt: expect.any(Date) });
        // Again: nothing changes, and nobody is told twice.
        expect(await users.deactivate(a, member.id, origin)).toEqual(deactivated);
        expect(told.filter((id) => id === member.id)).toHaveLength(1);
        expect((await users.ownerStates([member.id])).get(member.id)).toEqual({
          active: false,
          role: 'developer',
          organizationId: a.organizationId,
        });
        const inactive = (await users.list(a, { active: false, limit: 100 })).data.map((u) => u.id);
        expect(inactive).toContain(member.id);
        expect((await users.list(a, { active: true, limit: 100 })).data.map((u) => u.id)).not.toContain(
          member.id,
        );

        expect(await users.activate(a, member.id, origin)).toMatchObject({
          active: true,
          deactivatedAt: null,
        });
        expect((await users.ownerStates([member.id])).get(member.id)?.active).toBe(true);
      });

      it('reads a member for the requests of one turn in one statement, and the next read sees a deactivation', async () => {
        const member = await newUser(a, 'developer');
        const other = await newUser(a, 'viewer');
        const reads = jest.spyOn(context.get(UsersRepository), 'findAmong');
        try {
          const [first, second, third, foreign] = await Promise.all([
            users.findMemberForRequest(a.organizationId, member.id),
            users.findMemberForRequest(a.organizationId, member.id),
            users.findMemberForRequest(a.organizationId, other.id),
            // The right id under another organization is nobody.
            users.findMemberForRequest(b.organizationId, member.id),
          ]);
          expect(reads).toHaveBeenCalledTimes(1);
          // Each distinct (organization, id) pair once, the repeated one too.
          expect(reads.mock.calls[0][0]).toEqual([
            { organizationId: a.organizationId, id: member.id },
            { organizationId: a.organizationId, id: other.id },
            { organizationId: b.organizationId, id: member.id },
          ]);
          expect(first).toMatchObject({ id: member.id, active: true, role: 'developer' });
          expect(second).toMatchObject({ id: member.id });
          expect(third).toMatchObject({ id: other.id, role: 'viewer' });
          expect(foreign).toBeNull();

          await users.deactivate(a, member.id, origin);
          expect(await users.findMemberForRequest(a.organizationId, member.id)).toMatchObject({
            active: false,
          });
          expect(reads).toHaveBeenCalledTimes(2);
        } finally {
          reads.mockRestore();
        }
      });

      it('rolls the deactivation back when a consequence of it fails', async () => {
        const member = await newUser(a);
        context.get(UserLifecycle).onDeactivated(async ({ userId }, manager) => {
          if (userId !== member.id) return;
          // A consequence that wrote in the same transaction, then failed.
          await manager.query(`UPDATE users SET name = 'half done' WHERE id = $1`, [userId]);
          throw new Error('revoking the personal keys failed');
        });
        await expect(users.deactivate(a, member.id, origin)).rejects.toThrow(
          'revoking the personal keys failed',
        );
        expect(await users.get(a, member.id)).toMatchObject({
          active: true,
          deactivatedAt: null,
          name: 'member',
        });
        // Its audit entry was in the same transaction: gone with it.
        const entries = await context
          .get(AuditService)
          .list(a.organizationId, { action: 'user.deactivated', limit: 100 });
        expect(entries.data.filter((entry) => entry.details.user_id === member.id)).toEqual([]);
      });
    });

    it('lists newest first, page by page', async () => {
      const org = await administratorOf(context, 'Paged');
      const created = [org.userId!];
      for (let i = 0; i < 3; i++) {
        await nextMillisecond();
        created.push((await newUser(org)).id);
      }
      const newestFirst = created.reverse();
      const first = await users.list(org, { limit: 2 });
      const second = await users.list(org, { limit: 2, cursor: first.next_cursor! });
      expect(first.data.map((u) => u.id)).toEqual(newestFirst.slice(0, 2));
      expect(second.data.map((u) => u.id)).toEqual(newestFirst.slice(2));
      expect(second.next_cursor).toBeNull();
    });
  });

  describe('teams', () => {
    let a: Principal;
    let b: Principal;

    beforeAll(async () => {
      a = await administratorOf(context, 'TeamsA');
      b = await administratorOf(context, 'TeamsB');
    });

    const memberIds = async (principal: Principal, teamId: string): Promise<string[]> =>
      ((await teams.get(principal, teamId)).members ?? []).map((member) => member.userId).sort();

    it('refuses a name the organization already uses (team_name_taken); another organization may use it', async () => {
      const team = await teams.create(a, { name: 'Research' }, origin);
      expect(team).toMatchObject({ organizationId: a.organizationId, name: 'Research', members: [] });
      await expect(teams.create(a, { name: 'Research' }, origin)).rejects.toMatchObject({
        code: 'team_name_taken',
      });
      await teams.create(b, { name: 'Research' }, origin);
      expect((await teams.list(a, { limit: 100 })).data.filter((t) => t.name === 'Research')).toHaveLength(1);
    });

    it('adds members once however often asked, and removes them', async () => {
      const team = await teams.create(a, { name: 'Members' }, origin);
      const [x, y] = [await newUser(a), await newUser(a)];
      await teams.addMember(a, team.id, x.id, origin);
      await teams.addMember(a, team.id, x.id, origin);
      expect((await teams.addMember(a, team.id, y.id, origin)).members?.map((m) => m.userId).sort()).toEqual(
        [x.id, y.id].sort(),
      );
      await teams.removeMember(a, team.id, x.id, origin);
      expect(await memberIds(a, team.id)).toEqual([y.id]);
      // No longer, or never, a member.
      for (const userId of [x.id, a.userId!]) {
        await expect(teams.removeMember(a, team.id, userId, origin)).rejects.toMatchObject({
          code: 'not_found',
        });
      }
      const listed = (await teams.list(a, { limit: 100 })).data.find((t) => t.id === team.id);
      expect(listed?.members?.map((m) => m.userId)).toEqual([y.id]);
    });

    it("hides an organization's teams, and keeps its users out of other organizations' teams", async () => {
      const teamA = await teams.create(a, { name: 'Secret' }, origin);
      const userA = await newUser(a);
      await teams.addMember(a, teamA.id, userA.id, origin);
      const teamB = await teams.create(b, { name: 'Own' }, origin);
      const userB = await newUser(b);

      const attempts = [
        () => teams.get(b, teamA.id),
        () => teams.addMember(b, teamA.id, userB.id, origin),
        () => teams.removeMember(b, teamA.id, userA.id, origin),
        // Nor can B put A's user into B's own team, or A put B's user into A's.
        () => teams.addMember(b, teamB.id, userA.id, origin),
        () => teams.addMember(a, teamA.id, userB.id, origin),
      ];
      for (const attempt of attempts) await expect(attempt()).rejects.toMatchObject({ code: 'not_found' });
      const listedByB = (await teams.list(b, { limit: 100 })).data.map((t) => t.id);
      expect(listedByB).toContain(teamB.id);
      expect(listedByB).not.toContain(teamA.id);
      expect(await teams.exists(b.organizationId, teamA.id)).toBe(false);
      expect(await teams.exists(a.organizationId, teamA.id)).toBe(true);
      expect(await teams.exists(a.organizationId, 'not-a-team')).toBe(false);
      expect(await memberIds(a, teamA.id)).toEqual([userA.id]);
      expect(await memberIds(b, teamB.id)).toEqual([]);
    });
  });
});
