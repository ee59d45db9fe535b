import { Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service';
import { originOf } from '../audit/request-origin.decorator';
import { MetricsService } from '../metrics/metrics.service';
import type { ProblemException } from '../common/problem';
import type { AccessAttempt } from './access-attempt';
import { AccessDenial, denialException, denialResponseOf } from './access-denial';

/**
 * The one place a refusal of the key check is recorded: a `key.denied` audit entry for the refusals
 * of a resolved key that operators look for (coalesced per key, reason and window by the audit
 * service), and the key-check counter by outcome. Returns the exception to throw.
 */
@Injectable()
export class DenialRecorder {
  constructor(
    private readonly audit: AuditService,
    private readonly metrics: MetricsService,
  ) {}

  refuse({ request }: AccessAttempt, denial: AccessDenial): ProblemException {
    this.metrics.recordKeyCheck(denial.code);
    const keyId = request.principal?.apiKeyId;
    if (keyId && denialResponseOf(denial.code).audited) {
      this.audit.recordDenial({
        organizationId: request.principal!.organizationId,
        keyId,
        reason: denial.code,
        actor: { type: 'api_key', id: keyId },
        origin: originOf(request),
        details: { ...denial.auditDetails },
      });
    }
    return denialException(denial);
  }

  allow(): void {
    this.metrics.recordKeyCheck('allowed');
  }
}
