import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, Repository } from 'typeorm';
import { ListQueryDto, Page, paginate } from '../common/pagination';
import { CustomRole } from './custom-role.entity';

/** The custom_roles table (built-in roles are constants): every query on it. */
@Injectable()
export class RolesRepository {
  constructor(@InjectRepository(CustomRole) private readonly customRoles: Repository<CustomRole>) {}

  /** Runs `work` in one transaction: a change and its audit entry; a deletion and the check that nothing holds it. */
  transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.customRoles.manager.transaction(work);
  }

  findByName(organizationId: string, roleName: string): Promise<CustomRole | null> {
    return this.customRoles.findOneBy({ organizationId, roleName });
  }

  insert(
    manager: EntityManager,
    fields: Pick<CustomRole, 'id' | 'organizationId' | 'roleName' | 'permissions'>,
  ): Promise<CustomRole> {
    return manager.save(CustomRole, this.customRoles.create(fields));
  }

  save(manager: EntityManager, role: CustomRole): Promise<CustomRole> {
    return manager.save(CustomRole, role);
  }

  page(organizationId: string, query: ListQueryDto): Promise<Page<CustomRole>> {
    return paginate(
      this.customRoles
        .createQueryBuilder('role')
        .where('role.organization_id = :organizationId', { organizationId }),
      query,
    );
  }

  /** Locks the role's row until the caller's transaction ends (assignments check it meanwhile). */
  async lock(manager: EntityManager, id: string): Promise<void> {
    await manager.findOne(CustomRole, { where: { id }, lock: { mode: 'pessimistic_write' } });
  }

  async delete(manager: EntityManager, id: string): Promise<void> {
    await manager.delete(CustomRole, { id });
  }
}
