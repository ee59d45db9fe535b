import { Injectable } from '@nestjs/common';
import type { Principal } from '../../../src/access/principal';
import { isIdOf, newId } from '../../../src/common/ids';
import { ListQueryDto, Page } from '../../../src/common/pagination';
import { CreateDatasetDto } from './dataset.dto';
import { Dataset } from './dataset.entity';
import { DATASET_ID } from './datasets.declarations';
import { DatasetError, DatasetErrorCode } from './datasets.errors';
import { DatasetsRepository } from './datasets.repository';

/** Datasets of the caller's organization: every call is scoped by `principal.organizationId`. */
@Injectable()
export class DatasetsService {
  constructor(private readonly datasets: DatasetsRepository) {}

  create(principal: Principal, dto: CreateDatasetDto): Promise<Dataset> {
    return this.datasets.insert({
      id: newId(DATASET_ID),
      organizationId: principal.organizationId,
      name: dto.name,
      description: dto.description ?? null,
      createdBy: principal.apiKeyId ?? principal.userId,
    });
  }

  list(principal: Principal, query: ListQueryDto): Promise<Page<Dataset>> {
    return this.datasets.page(principal.organizationId, query);
  }

  async get(principal: Principal, id: string): Promise<Dataset> {
    // Not an id of this kind: 404 without a query. Another organization's: 404 too, never 403.
    const dataset = isIdOf(DATASET_ID, id)
      ? await this.datasets.findInOrganization(principal.organizationId, id)
      : null;
    if (!dataset) throw new DatasetError(DatasetErrorCode.NotFound, 'The dataset was not found.');
    return dataset;
  }
}
