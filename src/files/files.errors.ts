import { defineDomainErrors, ErrorKind } from '../common/domain-error';

export enum FileErrorCode {
  NotFound = 'not_found',
  FileRequired = 'file_required',
  /** An output file uploaded after its task's run ended (the task token was live when checked). */
  TaskTokenExpired = 'task_token_expired',
}

export class FileError extends defineDomainErrors('files', {
  [FileErrorCode.NotFound]: ErrorKind.NotFound,
  [FileErrorCode.FileRequired]: ErrorKind.InvalidInput,
  [FileErrorCode.TaskTokenExpired]: ErrorKind.Unauthenticated,
}) {}
