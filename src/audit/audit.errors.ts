import { defineDomainErrors, ErrorKind } from '../common/domain-error';

export enum AuditErrorCode {
  /** A `checkpoint` this deployment did not sign for this organization. */
  InvalidCheckpoint = 'invalid_checkpoint',
}

export class AuditError extends defineDomainErrors('audit', {
  [AuditErrorCode.InvalidCheckpoint]: ErrorKind.InvalidInput,
}) {}
