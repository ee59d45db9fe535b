import { Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service';
import { originOf } from '../audit/request-origin.decorator';
import { MetricsService } from '../metrics/metrics.service';
import { UsageCounter } from '../usage/usage-counter';
import type { ProblemException } from '../common/problem';
import type { AccessAttempt } from './access-attempt';
import { AccessDenial, denialException, denialResponseOf } from './access-denial';

/**
 * The one place the outcome of the key check is recorded: the key-check counter by outcome (metrics),
 * the key's usage (every request whose key resolved, allowed or refused by reason), and a
 * `key.denied` audit entry for the refusals operators look for (coalesced per key, reason and window
 * by the audit service). `refuse` returns the exception to throw.
 */
@Injectable()
export class DenialRecorder {
  constructor(
    private readonly audit: AuditService,
    private readonly metrics: MetricsService,
    private readonly usage: UsageCounter,
  ) {}

  refuse({ request }: AccessAttempt, denial: AccessDenial): ProblemException {
    this.metrics.recordKeyCheck(denial.code);
    const key = request.principal?.key;
    if (key) this.usage.count(request.principal!.organizationId, key.id, denial.code);
    else if (denial.subject)
      this.usage.count(denial.subject.organizationId, denial.subject.keyId, denial.code);
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

  allow({ request }: AccessAttempt): void {
    this.metrics.recordKeyCheck('allowed');
    const key = request.principal?.key;
    if (key) this.usage.count(request.principal!.organizationId, key.id, 'allowed');
  }
}
