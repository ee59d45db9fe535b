import { defineDomainErrors, ErrorKind } from '../common/domain-error';

export enum HealthErrorCode {
  /** Readiness: Redis is unreachable and RATE_LIMIT_FAILURE_MODE=closed, so requests would be refused. */
  RedisUnavailable = 'redis_unavailable',
}

export class HealthError extends defineDomainErrors('health', {
  [HealthErrorCode.RedisUnavailable]: ErrorKind.Unavailable,
}) {}
