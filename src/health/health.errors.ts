import { defineDomainErrors, ErrorKind } from '../common/domain-error';

export enum HealthErrorCode {
  /** Readiness: Redis is unreachable and RATE_LIMIT_FAILURE_MODE=closed, so requests would be refused. */
  RedisUnavailable = 'redis_unavailable',
  /** Readiness: the instance got SIGTERM and drains (SHUTDOWN_DRAIN_MS) before closing its port. */
  ShuttingDown = 'shutting_down',
}

export class HealthError extends defineDomainErrors('health', {
  [HealthErrorCode.RedisUnavailable]: ErrorKind.Unavailable,
  [HealthErrorCode.ShuttingDown]: ErrorKind.Unavailable,
}) {}
