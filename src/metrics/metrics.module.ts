import { Module } from '@nestjs/common';
import { MetricsService } from './metrics.service';

/**
 * The instance's metrics, without the HTTP side: modules with something to export inject MetricsService
 * (audit and usage: what waits for the database). `/metrics` is MetricsHttpModule's.
 */
@Module({ providers: [MetricsService], exports: [MetricsService] })
export class MetricsModule {}
