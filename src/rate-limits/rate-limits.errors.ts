import { defineDomainErrors, ErrorKind } from '../common/domain-error';

export enum RateLimitErrorCode {
  /** Redis is unreachable and RATE_LIMIT_FAILURE_MODE=closed. */
  RateLimiterUnavailable = 'rate_limiter_unavailable',
}

export class RateLimitError extends defineDomainErrors('rate-limits', {
  [RateLimitErrorCode.RateLimiterUnavailable]: ErrorKind.Unavailable,
}) {}
