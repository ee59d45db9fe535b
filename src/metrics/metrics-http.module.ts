import { Module } from '@nestjs/common';
import { MetricsController } from './metrics.controller';
import { MetricsModule } from './metrics.module';

/** `GET /metrics` (API process only: the worker serves no HTTP). */
@Module({ imports: [MetricsModule], controllers: [MetricsController] })
export class MetricsHttpModule {}
