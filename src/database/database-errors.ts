import { QueryRunnerAlreadyReleasedError, QueryRunnerProviderAlreadyReleasedError } from 'typeorm';
import { registerErrorTranslator } from '../common/domain-error';
import { DatabaseError, DatabaseErrorCode } from './database.errors';

/**
 * Errors that mean "the database cannot be reached right now" rather than "this query is wrong".
 * They answer 503 so clients retry, instead of a 500 that looks like a bug.
 */
const UNAVAILABLE_ERRNOS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
// SQLSTATE classes 08 (connection exception) and 57P (operator intervention: shutdown, cannot connect now),
// too many connections (53300), and a statement cancelled at its deadline (57014, statement_timeout): a
// database that does not answer in time is treated as one that does not answer.
const UNAVAILABLE_SQLSTATE = /^(08\d{3}|57P0[1-4]|57014|53300)$/;
// "Driver not Connected" is TypeORM's and "Cannot use a pool after calling end" pg's answer once the pool is
// gone (data source destroyed, e.g. during shutdown): no connection can be had, not a faulty query.
const UNAVAILABLE_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection is not established|DataSource is not initialized|Driver not Connected|Cannot use a pool after calling end on the pool/i;

export function isDatabaseUnavailable(error: unknown): boolean {
  // A transaction whose connection the pool dropped when the database went away.
  if (
    error instanceof QueryRunnerAlreadyReleasedError ||
    error instanceof QueryRunnerProviderAlreadyReleasedError
  ) {
    return true;
  }
  for (let current = error as Record<string, unknown> | undefined, depth = 0; current && depth < 4; depth++) {
    const code = typeof current.code === 'string' ? current.code : undefined;
    if (code && (UNAVAILABLE_ERRNOS.has(code) || UNAVAILABLE_SQLSTATE.test(code))) return true;
    if (typeof current.message === 'string' && UNAVAILABLE_MESSAGES.test(current.message)) return true;
    current = (current.driverError ?? current.cause) as Record<string, unknown> | undefined;
  }
  return false;
}

/** The driver's error carries this SQLSTATE (one a trigger of ours raises, say). */
export function hasSqlState(error: unknown, state: string): boolean {
  const e = error as { code?: string; driverError?: { code?: string } };
  return (e?.driverError?.code ?? e?.code) === state;
}

/** PostgreSQL's unique_violation, so a race on a unique name becomes a 409 instead of a 500. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const e = error as {
    code?: string;
    driverError?: { code?: string; constraint?: string };
    constraint?: string;
  };
  const code = e?.driverError?.code ?? e?.code;
  if (code !== '23505') return false;
  return !constraint || (e.driverError?.constraint ?? e.constraint) === constraint;
}

/** PostgreSQL's foreign_key_violation: a row names one that is gone (deleted meanwhile by a racing request). */
export function isForeignKeyViolation(error: unknown, constraint?: string): boolean {
  const e = error as {
    code?: string;
    driverError?: { code?: string; constraint?: string };
    constraint?: string;
  };
  const code = e?.driverError?.code ?? e?.code;
  if (code !== '23503') return false;
  return !constraint || (e.driverError?.constraint ?? e.constraint) === constraint;
}

/**
 * A request value PostgreSQL cannot store as text: a NUL character (22021) or one the encoding cannot
 * represent (22P05). The request's fault, so a 400 rather than a 500.
 */
export function isUnstorableText(error: unknown): boolean {
  const e = error as { code?: string; driverError?: { code?: string } };
  const code = e?.driverError?.code ?? e?.code;
  return code === '22021' || code === '22P05';
}

/** Driver errors that are not bugs: the database being unreachable, or text it cannot store. */
export function translateDatabaseError(error: unknown): DatabaseError | undefined {
  if (isUnstorableText(error)) {
    return new DatabaseError(
      DatabaseErrorCode.InvalidCharacters,
      'The request contains characters that cannot be stored, such as NUL.',
      { cause: error },
    );
  }
  if (isDatabaseUnavailable(error)) {
    return new DatabaseError(
      DatabaseErrorCode.DatabaseUnavailable,
      'The database is unreachable; retry shortly.',
      {
        cause: error,
      },
    );
  }
  return undefined;
}

registerErrorTranslator(translateDatabaseError);
