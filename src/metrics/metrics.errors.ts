import { defineDomainErrors, ErrorKind } from '../common/domain-error';

export enum MetricsErrorCode {
  /** GET /metrics without `Authorization: Bearer <METRICS_TOKEN>`. */
  InvalidOperatorToken = 'invalid_operator_token',
}

export class MetricsError extends defineDomainErrors('metrics', {
  [MetricsErrorCode.InvalidOperatorToken]: ErrorKind.Unauthenticated,
}) {}
