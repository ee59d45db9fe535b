import { Global, Module, OnModuleInit } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { MetricsModule } from '../metrics/metrics.module';
import { Secrets } from '../secrets/secrets';
import { AuditActions } from './audit-actions';
import { AuditChainKey } from './audit-chain';
import { AUDIT_MODULE_ACTIONS } from './audit.declarations';
import { AuditChainHead } from './audit-chain-head.entity';
import { AuditChainVerifier } from './audit-chain-verifier';
import { AuditEntry } from './audit-entry.entity';
import { AuditRepository } from './audit.repository';
import { AuditSubjects } from './audit-subjects';
import { AuditService } from './audit.service';
import { DenialWindowJob } from './denial-window.job';

/**
 * Global so guards and any feature module can record (AuditService) and declare what they record
 * (AuditActions) without import wiring.
 */
@Global()
@Module({
  imports: [MetricsModule, TypeOrmModule.forFeature([AuditEntry, AuditChainHead])],
  providers: [
    AuditActions,
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
  exports: [AuditService, AuditSubjects, AuditActions],
})
export class AuditModule implements OnModuleInit {
  constructor(private readonly actions: AuditActions) {}

  /** Only its own action (audit.declarations.ts): every other module declares what it records. */
  onModuleInit(): void {
    this.actions.declare(AUDIT_MODULE_ACTIONS);
  }
}
