import { defineDomainErrors, ErrorKind } from '../../../src/common/domain-error';

export enum DatasetErrorCode {
  NotFound = 'not_found',
}

/** The extension's errors; the problem filter answers them like the core's (not_found: 404). */
export class DatasetError extends defineDomainErrors('datasets', {
  [DatasetErrorCode.NotFound]: ErrorKind.NotFound,
}) {}
