import { Module } from '@nestjs/common';
import { DatasetsController } from './datasets.controller';
import { DatasetsModule } from './datasets.module';

/** The datasets API (/v1/datasets) over DatasetsModule: the API process only. */
@Module({
  imports: [DatasetsModule],
  controllers: [DatasetsController],
})
export class DatasetsHttpModule {}
