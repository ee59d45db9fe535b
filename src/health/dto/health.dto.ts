/** `GET /health/live`. */
export class LiveResponse {
  status: 'ok';
}

export class DependencyStatus {
  /** `degraded`: Redis unreachable while RATE_LIMIT_FAILURE_MODE=open (every request still served). */
  status: 'up' | 'down' | 'degraded';
  /** Why, when it is not up. */
  message?: string;
}

export class Dependencies {
  database?: DependencyStatus;
  /** Present when REDIS_URL is set. */
  redis?: DependencyStatus;
}

/** `GET /health/ready` (the shape of @nestjs/terminus): `info` the passing checks, `error` the failing. */
export class ReadyResponse {
  status: 'ok' | 'error' | 'shutting_down';
  info: Dependencies;
  error: Dependencies;
  details: Dependencies;
}
