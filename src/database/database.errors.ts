import { defineDomainErrors, ErrorKind } from '../common/domain-error';

export enum DatabaseErrorCode {
  DatabaseUnavailable = 'database_unavailable',
  InvalidCharacters = 'invalid_characters',
}

export class DatabaseError extends defineDomainErrors('database', {
  [DatabaseErrorCode.DatabaseUnavailable]: ErrorKind.Unavailable,
  [DatabaseErrorCode.InvalidCharacters]: ErrorKind.InvalidInput,
}) {}
