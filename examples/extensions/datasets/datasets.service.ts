import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { Principal } from '../../../src/access/principal';
import { actorOf, AuditService, type RequestOrigin } from '../../../src/audit/audit.service';
import { isIdOf, newId } from '../../../src/common/ids';
import { ListQueryDto, Page } from '../../../src/common/pagination';
import { EventsService } from '../../../src/events/events.service';
import { CreateDatasetDto, DatasetCreatedData, UpdateDatasetDto } from './dataset.dto';
import { Dataset } from './dataset.entity';
import { DATASET_ID, type DatasetAuditAction } from './datasets.declarations';
import { DatasetError, DatasetErrorCode } from './datasets.errors';
import { DatasetsRepository } from './datasets.repository';

/**
 * Datasets of the caller's organization: every call is scoped by `principal.organizationId`. Each change
 * is audited, and a creation is a `dataset.created` webhook event, in the change's own transaction (as
 * the core's modules record theirs): the three commit together or not at all.
 */
@Injectable()
export class DatasetsService {
  constructor(
    private readonly datasets: DatasetsRepository,
    private readonly audit: AuditService,
    private readonly events: EventsService,
  ) {}

  create(principal: Principal, dto: CreateDatasetDto, origin: RequestOrigin): Promise<Dataset> {
    return this.datasets.transaction(async (manager) => {
      const dataset = await this.datasets.insert(manager, {
        id: newId(DATASET_ID),
        organizationId: principal.organizationId,
        name: dto.name,
        description: dto.description ?? null,
        createdBy: principal.apiKeyId ?? principal.userId,
      });
      await this.record(manager, dataset, 'dataset.created', principal, origin, { name: dataset.name });
      await this.events.record(manager, [
        {
          organizationId: dataset.organizationId,
          type: 'dataset.created',
          data: {
            dataset_id: dataset.id,
            name: dataset.name,
            actor: actorOf(principal),
          } satisfies DatasetCreatedData,
        },
      ]);
      return dataset;
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

  async update(
    principal: Principal,
    id: string,
    dto: UpdateDatasetDto,
    origin: RequestOrigin,
  ): Promise<Dataset> {
    const dataset = await this.get(principal, id);
    if (dto.name !== undefined) dataset.name = dto.name;
    if (dto.description !== undefined) dataset.description = dto.description;
    return this.datasets.transaction(async (manager) => {
      const saved = await this.datasets.save(manager, dataset);
      await this.record(manager, saved, 'dataset.updated', principal, origin, {
        // The fields the request gave (the DTO instance also has the others, undefined).
        fields: Object.entries(dto)
          .filter(([, value]) => value !== undefined)
          .map(([field]) => field)
          .sort(),
      });
      return saved;
    });
  }

  async delete(principal: Principal, id: string, origin: RequestOrigin): Promise<void> {
    const dataset = await this.get(principal, id);
    await this.datasets.transaction(async (manager) => {
      await this.datasets.delete(manager, dataset);
      await this.record(manager, dataset, 'dataset.deleted', principal, origin, { name: dataset.name });
    });
  }

  /** An audit entry naming the dataset, in the change's transaction. */
  private record(
    manager: EntityManager,
    dataset: Dataset,
    action: DatasetAuditAction,
    principal: Principal,
    origin: RequestOrigin,
    details: Record<string, unknown>,
  ): Promise<void> {
    return this.audit.append(manager, [
      {
        organizationId: dataset.organizationId,
        action,
        actor: actorOf(principal),
        origin,
        details: { dataset_id: dataset.id, ...details },
      },
    ]);
  }
}
