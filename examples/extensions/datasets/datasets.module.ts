import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Dataset } from './dataset.entity';
import { DatasetsRepository } from './datasets.repository';
import { DatasetsService } from './datasets.service';

/**
 * Datasets without HTTP: the entity (TypeOrmModule.forFeature registers it with the app's DataSource,
 * which loads every registered entity), the repository and the service. Both processes load it, so a
 * worker-side feature (an agent reading a dataset) could use DatasetsService.
 */
@Module({
  imports: [TypeOrmModule.forFeature([Dataset])],
  providers: [DatasetsRepository, DatasetsService],
  exports: [DatasetsService],
})
export class DatasetsModule {}
