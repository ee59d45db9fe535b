import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Principal } from '../../../src/access/principal';
import { Created, NoContent, Operation } from '../../../src/access/route-access.decorators';
import type { RequestOrigin } from '../../../src/audit/audit.service';
import { Origin } from '../../../src/audit/request-origin.decorator';
import { ListQueryDto } from '../../../src/common/pagination';
import { CreateDatasetDto, DatasetPage, DatasetResponse, UpdateDatasetDto } from './dataset.dto';
import { DatasetsService } from './datasets.service';

/**
 * /v1/datasets. Every route declares its permission (the app refuses to start if one names a permission
 * no module declared; a route that declares nothing is refused for everyone), takes the caller's
 * Principal and stays within its organization. Changes take the caller's origin for their audit entries.
 */
@ApiTags('datasets')
@Controller('v1/datasets')
export class DatasetsController {
  constructor(private readonly datasets: DatasetsService) {}

  @Get()
  @Operation('datasets:read', "The organization's datasets, newest first", DatasetPage, 400)
  async list(@Principal() principal: Principal, @Query() query: ListQueryDto): Promise<DatasetPage> {
    const page = await this.datasets.list(principal, query);
    return { data: page.data.map(DatasetResponse.of), next_cursor: page.next_cursor };
  }

  @Post()
  @Operation('datasets:create', 'Create a dataset', Created(DatasetResponse), 400)
  async create(
    @Principal() principal: Principal,
    @Body() dto: CreateDatasetDto,
    @Origin() origin: RequestOrigin,
  ): Promise<DatasetResponse> {
    return DatasetResponse.of(await this.datasets.create(principal, dto, origin));
  }

  @Get(':id')
  @Operation('datasets:read', 'Get a dataset', DatasetResponse, 404)
  async get(@Principal() principal: Principal, @Param('id') id: string): Promise<DatasetResponse> {
    return DatasetResponse.of(await this.datasets.get(principal, id));
  }

  @Patch(':id')
  @Operation('datasets:update', "Change a dataset's name or description", DatasetResponse, 400, 404)
  async update(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Body() dto: UpdateDatasetDto,
    @Origin() origin: RequestOrigin,
  ): Promise<DatasetResponse> {
    return DatasetResponse.of(await this.datasets.update(principal, id, dto, origin));
  }

  @Delete(':id')
  @HttpCode(204)
  @Operation('datasets:delete', 'Delete a dataset', NoContent, 404)
  async delete(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Origin() origin: RequestOrigin,
  ): Promise<void> {
    await this.datasets.delete(principal, id, origin);
  }
}
