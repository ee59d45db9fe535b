import { Injectable } from '@nestjs/common';

/**
 * PLACEHOLDER while the usage module is written (issue 14): the key check calls `count` for every
 * request whose key resolved. Replaced by the real in-memory aggregation with batched flushes.
 */
@Injectable()
export class UsageCounter {
  count(_organizationId: string, _keyId: string, _outcome: string): void {}
}
