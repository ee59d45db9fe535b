/**
 * Domain errors: what services throw for an expected failure. A service names *what* went wrong (a
 * stable `code` from its module's enum) and *which kind* of failure it is; only the problem filter
 * turns a kind into an HTTP status, so no service picks a status.
 *
 * Each module declares its codes once, in `<module>.errors.ts`:
 *
 *   export enum TaskErrorCode { UnknownAgentType = 'unknown_agent_type', ... }
 *   export class TaskError extends defineDomainErrors('tasks', {
 *     [TaskErrorCode.UnknownAgentType]: ErrorKind.Unprocessable, ...
 *   }) {}
 *   throw new TaskError(TaskErrorCode.UnknownAgentType, 'No agent of type "x" exists.');
 *
 * Every declared code lands in ERROR_CATALOGUE, which a test compares with the error table of docs/errors.md.
 */

/** The kinds of failure; the problem filter holds the one table from kind to HTTP status. */
export enum ErrorKind {
  InvalidInput = 'invalid_input',
  Unauthenticated = 'unauthenticated',
  Forbidden = 'forbidden',
  NotFound = 'not_found',
  Conflict = 'conflict',
  TooLarge = 'too_large',
  UnsupportedMediaType = 'unsupported_media_type',
  Unprocessable = 'unprocessable',
  TooManyRequests = 'too_many_requests',
  Unavailable = 'unavailable',
}

/** One field-level complaint of an invalid input. */
export interface FieldError {
  field: string;
  message: string;
}

export interface DomainErrorOptions {
  /** Field-level complaints (invalid input). */
  errors?: FieldError[];
  /** Extra members of the problem document (snake_case, public data only). */
  extensions?: Record<string, unknown>;
  /** When trying again can help (throttling, unavailability): sent as Retry-After. */
  retryAfterSeconds?: number;
  cause?: unknown;
}

export abstract class DomainError<Code extends string = string> extends Error {
  readonly errors?: FieldError[];
  readonly extensions: Record<string, unknown>;
  readonly retryAfterSeconds?: number;

  protected constructor(
    readonly module: string,
    readonly code: Code,
    readonly kind: ErrorKind,
    readonly detail: string,
    options: DomainErrorOptions = {},
  ) {
    super(detail, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.errors = options.errors;
    this.extensions = options.extensions ?? {};
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

/** Every code any module declared, by module: code -> kind. */
export const ERROR_CATALOGUE = new Map<string, Readonly<Record<string, ErrorKind>>>();

/**
 * The base class of one module's errors: its codes and their kinds declared once, the constructor
 * taking only codes of that module.
 */
export function defineDomainErrors<Code extends string>(
  module: string,
  kinds: Readonly<Record<Code, ErrorKind>>,
) {
  ERROR_CATALOGUE.set(module, kinds);
  return class ModuleDomainError extends DomainError<Code> {
    constructor(code: Code, detail: string, options?: DomainErrorOptions) {
      super(module, code, kinds[code], detail, options);
    }
  };
}

/**
 * Turns an error from below (a driver, a library) into a domain error, or answers undefined when it
 * does not recognise it. Platform modules register theirs (the database module: "unreachable" and
 * "unstorable text"), so the problem filter needs to know no database or library.
 */
export type ErrorTranslator = (error: unknown) => DomainError | undefined;

const translators: ErrorTranslator[] = [];

export function registerErrorTranslator(translator: ErrorTranslator): void {
  if (!translators.includes(translator)) translators.push(translator);
}

export function translateError(error: unknown): DomainError | undefined {
  if (error instanceof DomainError) return error;
  for (const translate of translators) {
    const translated = translate(error);
    if (translated) return translated;
  }
  return undefined;
}
