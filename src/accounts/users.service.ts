import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { Principal } from '../access/principal';
import { actorOf, AuditService, RequestOrigin } from '../audit/audit.service';
import type { AccountAuditAction } from './accounts.declarations';
import { AuditSubjects } from '../audit/audit-subjects';
import { InvalidationBus } from '../cache-invalidation/invalidation-bus';
import { isUniqueViolation } from '../database/database-errors';
import { newId, isIdOf } from '../common/ids';
import { USER_ID } from './accounts.declarations';
import { Page } from '../common/pagination';
import { batchedReadsById } from '../common/batched-reads';
import { assertWithinPrincipal } from '../roles/escalation';
import type { Permission } from '../roles/permissions';
import { RoleHolders } from '../roles/role-holders';
import { RolesService } from '../roles/roles.service';
import { CreateUserDto, ListUsersQueryDto, UpdateUserDto } from './dto/user.dto';
import { PasswordHasher } from './password-hasher';
import { UserLifecycle } from './user-lifecycle';
import { User } from './user.entity';
import { ADMINISTRATOR, UsersRepository } from './users.repository';
import { AccountError, AccountErrorCode } from './accounts.errors';

@Injectable()
export class UsersService {
  constructor(
    private readonly users: UsersRepository,
    private readonly roles: RolesService,
    private readonly passwords: PasswordHasher,
    private readonly lifecycle: UserLifecycle,
    private readonly invalidations: InvalidationBus,
    private readonly audit: AuditService,
    holders: RoleHolders,
    auditSubjects: AuditSubjects,
  ) {
    holders.register((manager, organizationId, role) => this.users.holdsRole(manager, organizationId, role));
    // The audit log names users by email (GET /v1/audit-log?expand=actor).
    auditSubjects.register('user', async (organizationId, ids) => {
      const users = await this.users.namesOf(organizationId, ids);
      return new Map([...users].map(([id, user]) => [id, { ...user, deleted: false }]));
    });
  }

  /** The user with this email, in any organization (sign-in: emails are unique across the service). */
  findByEmail(email: string): Promise<User | null> {
    return this.users.findByEmail(email);
  }

  /** A user of the organization, for credential checks outside a request's principal. */
  findMember(organizationId: string, id: string): Promise<User | null> {
    return this.users.findInOrganization(organizationId, id);
  }

  /**
   * The same as findMember, for the access-token check of every request: batched with the other reads
   * of the same event-loop turn (batchedReadsById), so a deactivation or a role change still applies to
   * the very next request. Read the answer, never change it.
   */
  readonly findMemberForRequest = batchedReadsById((refs) => this.users.findAmong(refs));

  /** The owners of personal keys as the key check needs them: active, and their role. */
  async ownerStates(
    ids: string[],
  ): Promise<Map<string, { active: boolean; role: string; organizationId: string }>> {
    const owners = ids.length ? await this.users.findByIds(ids) : [];
    return new Map(
      owners.map((owner) => [
        owner.id,
        { active: owner.active, role: owner.role, organizationId: owner.organizationId },
      ]),
    );
  }

  async create(principal: Principal, dto: CreateUserDto, origin: RequestOrigin): Promise<User> {
    assertWithinPrincipal(
      principal,
      await this.roles.requireRole(principal.organizationId, dto.role),
      'The new user',
    );
    const user = this.users.newUser({
      id: newId(USER_ID),
      organizationId: principal.organizationId,
      email: dto.email,
      name: dto.name,
      role: dto.role,
      passwordHash: await this.passwords.hash(dto.password),
      active: true,
      deactivatedAt: null,
    });
    try {
      return await this.users.transaction(async (manager) => {
        const saved = await this.users.save(user, manager);
        await this.record(manager, principal, origin, saved, 'user.created', { role: saved.role });
        return saved;
      });
    } catch (error) {
      if (isUniqueViolation(error, 'users_email_key')) throw emailTaken();
      throw error;
    }
  }

  list(principal: Principal, query: ListUsersQueryDto): Promise<Page<User>> {
    return this.users.page(principal.organizationId, { active: query.active }, query);
  }

  async get(principal: Principal, id: string): Promise<User> {
    const user = isIdOf(USER_ID, id)
      ? await this.users.findInOrganization(principal.organizationId, id)
      : null;
    if (!user) throw new AccountError(AccountErrorCode.NotFound, 'The user was not found.');
    return user;
  }

  async update(principal: Principal, id: string, dto: UpdateUserDto, origin: RequestOrigin): Promise<User> {
    const user = await this.getManageable(principal, id);
    const previousRole = user.role;
    if (dto.role !== undefined && dto.role !== user.role) {
      assertWithinPrincipal(
        principal,
        await this.roles.requireRole(principal.organizationId, dto.role),
        'The user',
      );
      user.role = dto.role;
    }
    if (dto.name !== undefined) user.name = dto.name;
    if (dto.password !== undefined) user.passwordHash = await this.passwords.hash(dto.password);
    // Which fields the request set, as identity.updated and key.updated name them: `password` says a
    // password was set, never what it is.
    const fields = Object.keys(dto)
      .filter((field) => (dto as Record<string, unknown>)[field] !== undefined)
      .sort();
    const saved = await this.users.transaction(async (manager) => {
      if (user.role !== ADMINISTRATOR) await this.keepAnAdministrator(manager, user);
      const row = await this.users.save(user, manager);
      const roleChange = row.role !== previousRole ? { role: row.role, previous_role: previousRole } : {};
      await this.record(manager, principal, origin, row, 'user.updated', { fields, ...roleChange });
      return row;
    });
    // The user's personal keys are narrowed by the user's role: caches must forget them.
    this.invalidations.publish({ kind: 'user', userId: saved.id });
    return saved;
  }

  /** Deactivation and its consequences (personal keys revoked) commit together or not at all. */
  async deactivate(principal: Principal, id: string, origin: RequestOrigin): Promise<User> {
    const user = await this.getManageable(principal, id);
    if (user.id === principal.userId) {
      throw new AccountError(
        AccountErrorCode.CannotDeactivateSelf,
        'A user cannot deactivate their own account.',
      );
    }
    if (!user.active) return user;
    const saved = await this.users.transaction(async (manager) => {
      await this.keepAnAdministrator(manager, user);
      const row = await this.users.setActive(manager, user.id, false, new Date());
      // A concurrent deactivation got there first: it records the change and revokes the keys.
      if (!row) return undefined;
      // Written before the consequences (personal keys revoked), so the chain reads cause, then effects.
      await this.record(manager, principal, origin, row, 'user.deactivated');
      await this.lifecycle.userDeactivated(
        { organizationId: user.organizationId, userId: user.id, actor: principal },
        manager,
      );
      return row;
    });
    if (!saved) return this.get(principal, id);
    this.invalidations.publish({ kind: 'user', userId: saved.id });
    return saved;
  }

  /** Activating an active user changes nothing and records nothing. */
  async activate(principal: Principal, id: string, origin: RequestOrigin): Promise<User> {
    const user = await this.getManageable(principal, id);
    if (user.active) return user;
    const saved = await this.users.transaction(async (manager) => {
      const row = await this.users.setActive(manager, user.id, true, null);
      if (row) await this.record(manager, principal, origin, row, 'user.activated');
      return row;
    });
    return saved ?? this.get(principal, id);
  }

  /**
   * Refuses (409 last_administrator) a change that takes `user` out of the organization's active
   * administrators when no other is left, judged on the administrators' rows as locked now (not as
   * read before the transaction), so that concurrent changes are judged one after the other. Without
   * an active administrator no one could manage users, roles or the organization's policies again.
   */
  private async keepAnAdministrator(manager: EntityManager, user: User): Promise<void> {
    const administrators = await this.users.lockActiveAdministrators(manager, user.organizationId);
    if (administrators.length === 1 && administrators[0] === user.id) {
      throw new AccountError(
        AccountErrorCode.LastAdministrator,
        "This is the organization's last active administrator: make another user administrator first.",
      );
    }
  }

  /** The audit entry of a change to `user`, in the change's transaction; names the user, never a secret. */
  private record(
    manager: EntityManager,
    principal: Principal,
    origin: RequestOrigin,
    user: User,
    action: AccountAuditAction,
    details: Record<string, unknown> = {},
  ): Promise<void> {
    return this.audit.append(manager, [
      {
        organizationId: user.organizationId,
        action,
        actor: actorOf(principal),
        origin,
        details: { user_id: user.id, email: user.email, ...details },
      },
    ]);
  }

  /** A caller may only change users whose current permissions it holds itself: no acting above one's rank. */
  private async getManageable(principal: Principal, id: string): Promise<User> {
    const user = await this.get(principal, id);
    const current = (await this.roles.permissionsOf(user.organizationId, user.role)) ?? new Set<Permission>();
    assertWithinPrincipal(principal, current, 'The target user');
    return user;
  }
}

export const emailTaken = (): AccountError =>
  new AccountError(AccountErrorCode.EmailTaken, 'A user with this email already exists.');
