import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { MetricsModule } from '../metrics/metrics.module';
import { Secrets } from '../secrets/secrets';
import { AuditChainKey } from './audit-chain';
import { AuditChainHead } from './audit-chain-head.entity';
import { AuditChainVerifier } from './audit-chain-verifier';
import { AuditEntry } from './audit-entry.entity';
import { AuditRepository } from './audit.repository';
import { AuditSubjects } from './audit-subjects';
import { AuditService } from './audit.service';
import { DenialWindowJob } from './denial-window.job';

/** Global so guards and any feature module can record without import wiring. */
@Global()
@Module({
  imports: [MetricsModule, TypeOrmModule.forFeature([AuditEntry, AuditChainHead])],
  providers: [
    AuditRepository,
    AuditService,
    AuditSubjects,
    AuditChainVerifier,
    DenialWindowJob,
    {
      provide: AuditChainKey,
      inject: [Secrets],
      useFactory: (secrets: Secrets) => new AuditChainKey(secrets.auditChainSecret),
    },
  ],
  exports: [AuditService, AuditSubjects],
})
export class AuditModule {}
