import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, In, Repository } from 'typeorm';
import type { OrganizationRowRef } from '../common/batched-reads';
import { ListQueryDto, Page, paginate } from '../common/pagination';
import { User } from './user.entity';

/** The built-in role that holds every permission: an organization always keeps one active holder. */
export const ADMINISTRATOR = 'administrator';

/** The users table: every query on it. Writes join the caller's transaction when given its manager. */
@Injectable()
export class UsersRepository {
  constructor(@InjectRepository(User) private readonly users: Repository<User>) {}

  /** Runs `work` in one transaction: a deactivation and its consequences commit together. */
  transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.users.manager.transaction(work);
  }

  newUser(fields: Partial<User>): User {
    return this.users.create(fields);
  }

  save(user: User, manager: EntityManager = this.users.manager): Promise<User> {
    return manager.save(User, user);
  }

  /**
   * Turns the user on or off, only if not already so; the row as it now is, or null when another
   * change did it first (it holds the row until it commits, then this one matches nothing), so that
   * one change is recorded once.
   */
  async setActive(
    manager: EntityManager,
    id: string,
    active: boolean,
    deactivatedAt: Date | null,
  ): Promise<User | null> {
    const { affected } = await manager.update(User, { id, active: !active }, { active, deactivatedAt });
    return affected ? manager.findOneBy(User, { id }) : null;
  }

  /** The user with this email, in any organization. */
  findByEmail(email: string): Promise<User | null> {
    return this.users.findOneBy({ email });
  }

  findInOrganization(organizationId: string, id: string): Promise<User | null> {
    return this.users.findOneBy({ id, organizationId });
  }

  /** The users among these (organization, id) pairs: one statement, each pair scoped by both. */
  findAmong(refs: OrganizationRowRef[]): Promise<User[]> {
    return this.users.findBy(refs.map(({ organizationId, id }) => ({ organizationId, id })));
  }

  /** The users among `ids` (any organization); duplicates are asked once. */
  findByIds(ids: string[]): Promise<User[]> {
    return this.users.findBy({ id: In([...new Set(ids)]) });
  }

  /** The organization's users among `ids`, by id: their name and email, for the audit log. */
  async namesOf(
    organizationId: string,
    ids: string[],
  ): Promise<Map<string, { name: string; email: string }>> {
    const rows = await this.users.manager.query<{ id: string; name: string; email: string }[]>(
      `SELECT id, name, email FROM users WHERE organization_id = $1 AND id = ANY($2::text[])`,
      [organizationId, ids],
    );
    return new Map(rows.map((row) => [row.id, { name: row.name, email: row.email }]));
  }

  page(organizationId: string, filters: { active?: boolean }, query: ListQueryDto): Promise<Page<User>> {
    const builder = this.users
      .createQueryBuilder('user')
      .where('user.organization_id = :organizationId', { organizationId });
    if (filters.active !== undefined) builder.andWhere('user.active = :active', { active: filters.active });
    return paginate(builder, query);
  }

  /**
   * The ids of the organization's active administrators, their rows locked in the caller's transaction
   * until it ends. A change that waited for one of these locks sees the row as the other change left it
   * (PostgreSQL checks the condition again on the newest version), so two administrators demoting or
   * deactivating each other at once cannot both find the other still there.
   */
  async lockActiveAdministrators(manager: EntityManager, organizationId: string): Promise<string[]> {
    const rows = await manager
      .createQueryBuilder(User, 'user')
      .select('user.id', 'id')
      .where('user.organization_id = :organizationId', { organizationId })
      .andWhere('user.role = :role', { role: ADMINISTRATOR })
      .andWhere('user.active')
      .orderBy('user.id', 'ASC')
      .setLock('pessimistic_write')
      .getRawMany<{ id: string }>();
    return rows.map((row) => row.id);
  }

  /** Whether a user of the organization holds the role (a role still held cannot be deleted). */
  holdsRole(manager: EntityManager, organizationId: string, role: string): Promise<boolean> {
    return manager.exists(User, { where: { organizationId, role } });
  }

  /** Whether the installation has any user at all. */
  anyExists(manager: EntityManager = this.users.manager): Promise<boolean> {
    return manager.exists(User);
  }
}
