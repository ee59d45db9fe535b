import { Logger } from '@nestjs/common';
import { RateLimitError, RateLimitErrorCode } from './rate-limits.errors';
import type { WindowCount, WindowToCount } from './window-counter';

/**
 * What a Redis storage answers when Redis cannot count a request (stopped, or hung past
 * REDIS_COMMAND_TIMEOUT_MS), the same whichever way the windows are counted: fail open (every window
 * with its whole budget, a warning at most every 10 s) or closed (503 rate_limiter_unavailable).
 */
export class RedisOutagePolicy {
  private readonly logger = new Logger('RateLimit');
  private lastWarning = 0;

  constructor(private readonly failureMode: 'open' | 'closed') {}

  countsOf(windows: readonly WindowToCount[], error: Error): WindowCount[] {
    if (this.failureMode === 'closed') {
      throw new RateLimitError(
        RateLimitErrorCode.RateLimiterUnavailable,
        'Rate limits cannot be checked right now; retry shortly.',
        { cause: error },
      );
    }
    if (Date.now() - this.lastWarning > 10_000) {
      this.lastWarning = Date.now();
      this.logger.warn(`rate limits not enforced, Redis unavailable: ${error.message}`);
    }
    return windows.map(() => ({ totalHits: 0, timeToExpire: 1, isBlocked: false, timeToBlockExpire: 0 }));
  }
}
