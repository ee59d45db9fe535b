import { Module } from '@nestjs/common';
import { AuditController } from './audit.controller';
import { AuditModule } from './audit.module';

/** The audit log API (/v1/audit-log) over AuditModule. */
@Module({
  imports: [AuditModule],
  controllers: [AuditController],
})
export class AuditHttpModule {}
