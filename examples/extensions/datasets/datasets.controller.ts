import { Body, Controller, Get, Param, Post, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Principal } from '../../../src/access/principal';
import { Created, Operation } from '../../../src/access/route-access.decorators';
import { ListQueryDto } from '../../../src/common/pagination';
import { CreateDatasetDto, DatasetPage, DatasetResponse } from './dataset.dto';
import { DatasetsService } from './datasets.service';

/**
 * /v1/datasets. Every route declares its permission (the app refuses to start if one names a permission
 * no module declared; a route that declares nothing is refused for everyone), takes the caller's
 * Principal and stays within its organization.
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
  async create(@Principal() principal: Principal, @Body() dto: CreateDatasetDto): Promise<DatasetResponse> {
    return DatasetResponse.of(await this.datasets.create(principal, dto));
  }

  @Get(':id')
  @Operation('datasets:read', 'Get a dataset', DatasetResponse, 404)
  async get(@Principal() principal: Principal, @Param('id') id: string): Promise<DatasetResponse> {
    return DatasetResponse.of(await this.datasets.get(principal, id));
  }
}
