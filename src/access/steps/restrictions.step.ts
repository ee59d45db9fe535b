import { Injectable } from '@nestjs/common';
import type { BlockList } from 'node:net';
import { compileIpAllowList, ipAllowed } from '../../restrictions/ip-rules';
import { compileReferrerRules, ReferrerRule, referrerAllowed } from '../../restrictions/referrer-rules';
import type { AccessAttempt, AccessStep, StepOutcome } from '../access-attempt';
import { AccessDenial, AccessDenialCode } from '../access-denial';
import type { KeyContext } from '../principal';

/**
 * Step 2, restrictions: a key's `allowed_ips` and `allowed_referrers`, before permission and rate
 * limit, so a refused request spends no budget. The client address is `request.ip`, which honours
 * TRUST_PROXY (nothing trusted by default, so X-Forwarded-For cannot spoof it). Rules are compiled
 * once per cached key record (the lists are the record's own arrays).
 */
@Injectable()
export class RestrictionsStep implements AccessStep {
  private readonly ipLists = new WeakMap<readonly string[], BlockList>();
  private readonly referrerRules = new WeakMap<readonly string[], ReferrerRule[]>();

  check({ request }: AccessAttempt): StepOutcome {
    const key = request.principal?.key;
    if (!key) return undefined;
    return this.refusalOf(key, request.ip, request.headers.referer ?? request.headers.origin);
  }

  /**
   * Why the key may not be used from this address or referrer, if it may not. A key with a list and no
   * value to check against it is refused. Also checks the address and referrer another service reports
   * (POST /v1/keys/verify).
   */
  refusalOf(
    key: Pick<KeyContext, 'allowedIps' | 'allowedReferrers'>,
    ip: string | undefined,
    referrer: string | undefined,
  ): AccessDenial | undefined {
    if (key.allowedIps.length && !ipAllowed(this.ipListOf(key.allowedIps), ip ?? '')) {
      return new AccessDenial(AccessDenialCode.IpNotAllowed, 'This key may not be used from this address.');
    }
    if (
      key.allowedReferrers.length &&
      !referrerAllowed(this.referrerRulesOf(key.allowedReferrers), referrer)
    ) {
      return new AccessDenial(
        AccessDenialCode.ReferrerNotAllowed,
        'This key may not be used from this referrer.',
      );
    }
    return undefined;
  }

  private ipListOf(entries: readonly string[]): BlockList {
    let list = this.ipLists.get(entries);
    if (!list) this.ipLists.set(entries, (list = compileIpAllowList(entries)));
    return list;
  }

  private referrerRulesOf(patterns: readonly string[]): ReferrerRule[] {
    let rules = this.referrerRules.get(patterns);
    if (!rules) this.referrerRules.set(patterns, (rules = compileReferrerRules(patterns)));
    return rules;
  }
}
