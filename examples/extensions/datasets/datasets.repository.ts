import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { ListQueryDto, Page, paginate } from '../../../src/common/pagination';
import { Dataset } from './dataset.entity';

/** The datasets table: every query on it, each scoped to one organization. */
@Injectable()
export class DatasetsRepository {
  constructor(@InjectRepository(Dataset) private readonly datasets: Repository<Dataset>) {}

  insert(
    fields: Pick<Dataset, 'id' | 'organizationId' | 'name' | 'description' | 'createdBy'>,
  ): Promise<Dataset> {
    return this.datasets.save(this.datasets.create(fields));
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
