import { Injectable } from '@nestjs/common';
import { PeriodicJob } from '../scheduling/periodic-job';
import { AuditService } from './audit.service';

/** Every second, writes the coalesced `key.denied` windows that have run their length. */
@Injectable()
export class DenialWindowJob extends PeriodicJob {
  protected readonly jobName = 'audit-denial-windows';

  constructor(private readonly audit: AuditService) {
    super();
  }

  protected intervalMs(): number {
    return 1000;
  }

  protected run(): Promise<number> {
    return Promise.resolve(this.audit.closeDenialWindows(false));
  }
}
