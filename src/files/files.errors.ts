import { defineDomainErrors, ErrorKind } from '../common/domain-error';

export enum FileErrorCode {
  NotFound = 'not_found',
  FileRequired = 'file_required',
}

export class FileError extends defineDomainErrors('files', {
  [FileErrorCode.NotFound]: ErrorKind.NotFound,
  [FileErrorCode.FileRequired]: ErrorKind.InvalidInput,
}) {}
