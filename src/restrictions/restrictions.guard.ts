import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import type { BlockList } from 'node:net';
import { AuditService } from '../audit/audit.service';
import { originOf } from '../audit/request-origin.decorator';
import { forbidden } from '../common/problem';
import { compileIpAllowList, ipAllowed } from './ip-allow-list';
import { compileReferrerRules, referrerAllowed } from './referrer-allow-list';

/**
 * Second global guard: a key's `allowed_ips` and `allowed_referrers`, checked after the credential and
 * before permission and rate limit, so a refused request spends no budget. The client address is
 * `request.ip`, which honours TRUST_PROXY (nothing trusted by default, so X-Forwarded-For cannot
 * spoof it). Compiled rules are memoised per cached key row.
 */
@Injectable()
export class RestrictionsGuard implements CanActivate {
  private readonly ipLists = new WeakMap<readonly string[], BlockList>();
  private readonly referrerRules = new WeakMap<readonly string[], ReturnType<typeof compileReferrerRules>>();

  constructor(private readonly audit: AuditService) {}

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<Request>();
    const key = request.principal?.key;
    if (!key) return true;

    if (key.allowedIps.length) {
      let list = this.ipLists.get(key.allowedIps);
      if (!list) this.ipLists.set(key.allowedIps, (list = compileIpAllowList(key.allowedIps)));
      if (!ipAllowed(list, request.ip ?? '')) {
        this.deny(request, 'ip_not_allowed');
        throw forbidden('ip_not_allowed', 'This key may not be used from this address.');
      }
    }
    if (key.allowedReferrers.length) {
      let rules = this.referrerRules.get(key.allowedReferrers);
      if (!rules)
        this.referrerRules.set(key.allowedReferrers, (rules = compileReferrerRules(key.allowedReferrers)));
      const referrer = request.headers.referer ?? request.headers.origin;
      if (!referrerAllowed(rules, referrer)) {
        this.deny(request, 'referrer_not_allowed');
        throw forbidden('referrer_not_allowed', 'This key may not be used from this referrer.');
      }
    }
    return true;
  }

  private deny(request: Request, reason: string): void {
    const principal = request.principal!;
    this.audit.recordDenial({
      organizationId: principal.organizationId,
      keyId: principal.apiKeyId!,
      reason,
      actor: { type: 'api_key', id: principal.apiKeyId },
      origin: originOf(request),
    });
  }
}
