import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { DataSource, Repository } from 'typeorm';
import type { Principal } from '../auth/principal';
import { InvalidationBus } from '../cache-invalidation/invalidation-bus';
import { isUniqueViolation } from '../database/database-errors';
import { newId, isIdOf } from '../common/ids';
import { Page, paginate } from '../common/pagination';
import { conflict, notFound, ProblemException } from '../common/problem';
import { assertWithinPrincipal } from '../roles/escalation';
import type { Permission } from '../roles/permissions';
import { RolesService } from '../roles/roles.service';
import { CreateUserDto, ListUsersQueryDto, UpdateUserDto } from './dto/user.dto';
import { PasswordHasher } from './password-hasher';
import { UserLifecycle } from './user-lifecycle';
import { User } from './user.entity';

@Injectable()
export class UsersService {
  constructor(
    @InjectRepository(User) private readonly users: Repository<User>,
    private readonly dataSource: DataSource,
    private readonly roles: RolesService,
    private readonly passwords: PasswordHasher,
    private readonly lifecycle: UserLifecycle,
    private readonly invalidations: InvalidationBus,
  ) {}

  async create(principal: Principal, dto: CreateUserDto): Promise<User> {
    assertWithinPrincipal(
      principal,
      await this.roles.requireRole(principal.organizationId, dto.role),
      'The new user',
    );
    const user = this.users.create({
      id: newId('user'),
      organizationId: principal.organizationId,
      email: dto.email,
      name: dto.name,
      role: dto.role,
      passwordHash: await this.passwords.hash(dto.password),
      active: true,
      deactivatedAt: null,
    });
    try {
      return await this.users.save(user);
    } catch (error) {
      if (isUniqueViolation(error, 'users_email_key')) throw emailTaken();
      throw error;
    }
  }

  list(principal: Principal, query: ListUsersQueryDto): Promise<Page<User>> {
    const builder = this.users
      .createQueryBuilder('user')
      .where('user.organization_id = :organizationId', { organizationId: principal.organizationId });
    if (query.active !== undefined) builder.andWhere('user.active = :active', { active: query.active });
    return paginate(builder, query);
  }

  async get(principal: Principal, id: string): Promise<User> {
    const user = isIdOf('user', id)
      ? await this.users.findOneBy({ id, organizationId: principal.organizationId })
      : null;
    if (!user) throw notFound('The user');
    return user;
  }

  async update(principal: Principal, id: string, dto: UpdateUserDto): Promise<User> {
    const user = await this.getManageable(principal, id);
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
    const saved = await this.users.save(user);
    // The user's personal keys are narrowed by the user's role: caches must forget them.
    this.invalidations.publish({ kind: 'user', userId: saved.id });
    return saved;
  }

  /** Deactivation and its consequences (personal keys revoked) commit together or not at all. */
  async deactivate(principal: Principal, id: string): Promise<User> {
    const user = await this.getManageable(principal, id);
    if (user.id === principal.userId) {
      throw conflict('cannot_deactivate_self', 'A user cannot deactivate their own account.');
    }
    if (!user.active) return user;
    const saved = await this.dataSource.transaction(async (manager) => {
      user.active = false;
      user.deactivatedAt = new Date();
      const row = await manager.save(user);
      await this.lifecycle.userDeactivated(
        { organizationId: user.organizationId, userId: user.id, actor: principal },
        manager,
      );
      return row;
    });
    this.invalidations.publish({ kind: 'user', userId: saved.id });
    return saved;
  }

  async activate(principal: Principal, id: string): Promise<User> {
    const user = await this.getManageable(principal, id);
    if (user.active) return user;
    user.active = true;
    user.deactivatedAt = null;
    return this.users.save(user);
  }

  /** A caller may only change users whose current permissions it holds itself: no acting above one's rank. */
  private async getManageable(principal: Principal, id: string): Promise<User> {
    const user = await this.get(principal, id);
    const current = (await this.roles.permissionsOf(user.organizationId, user.role)) ?? new Set<Permission>();
    assertWithinPrincipal(principal, current, 'The target user');
    return user;
  }
}

export const emailTaken = (): ProblemException =>
  conflict('email_taken', 'A user with this email already exists.');
