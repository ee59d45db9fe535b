import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, Repository } from 'typeorm';
import { ListQueryDto, Page, paginate } from '../../../src/common/pagination';
import { Dataset } from './dataset.entity';

/** The datasets table: every query on it, each scoped to one organization. */
@Injectable()
export class DatasetsRepository {
  constructor(@InjectRepository(Dataset) private readonly datasets: Repository<Dataset>) {}

  /** Runs `work` in one transaction: a change, its audit entry and its event commit together. */
  transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.datasets.manager.transaction(work);
  }

  insert(
    manager: EntityManager,
    fields: Pick<Dataset, 'id' | 'organizationId' | 'name' | 'description' | 'createdBy'>,
  ): Promise<Dataset> {
    const datasets = manager.getRepository(Dataset);
    return datasets.save(datasets.create(fields));
  }

  save(manager: EntityManager, dataset: Dataset): Promise<Dataset> {
    return manager.getRepository(Dataset).save(dataset);
  }

  async delete(manager: EntityManager, dataset: Pick<Dataset, 'id' | 'organizationId'>): Promise<void> {
    await manager.getRepository(Dataset).delete({ id: dataset.id, organizationId: dataset.organizationId });
  }

  page(organizationId: string, query: ListQueryDto): Promise<Page<Dataset>> {
    return paginate(
      this.datasets
        .createQueryBuilder('dataset')
        .where('dataset.organization_id = :organizationId', { organizationId }),
      query,
    );
  }

  findInOrganization(organizationId: string, id: string): Promise<Dataset | null> {
    return this.datasets.findOneBy({ id, organizationId });
  }
}
