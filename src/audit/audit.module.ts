import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { MetricsModule } from '../metrics/metrics.module';
import { AuditEntry } from './audit-entry.entity';
import { AuditRepository } from './audit.repository';
import { AuditSubjects } from './audit-subjects';
import { AuditService } from './audit.service';
import { DenialWindowJob } from './denial-window.job';

/** Global so guards and any feature module can record without import wiring. */
@Global()
@Module({
  imports: [MetricsModule, TypeOrmModule.forFeature([AuditEntry])],
  providers: [AuditRepository, AuditService, AuditSubjects, DenialWindowJob],
  exports: [AuditService, AuditSubjects],
})
export class AuditModule {}
