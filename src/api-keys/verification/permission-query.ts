/**
 * The permission-query language of `POST /v1/keys/verify`: permission names combined with `AND`, `OR`
 * and parentheses, `AND` binding tighter than `OR`:
 *
 *   agents:read AND (tasks:create OR tasks:execute)
 *
 *   query   := or
 *   or      := and ("OR" and)*
 *   and     := primary ("AND" primary)*
 *   primary := permission | "(" or ")"
 *
 * Decisions, so a caller's typo is refused rather than read differently than meant:
 * - The operators are the uppercase words `AND` and `OR`; `and`, `Or` and the like are refused with a
 *   hint (no permission name can be spelled that way, so they could only be a mistyped operator).
 * - Whitespace (any amount, any kind, or none next to a parenthesis) separates tokens and means nothing
 *   else; a name runs to the next whitespace or parenthesis.
 * - Every name must be a permission of the catalogue (`isPermission`): a query naming an unknown
 *   permission could never be satisfied and is almost certainly a mistake.
 * - The text is at most MAX_QUERY_LENGTH characters and parentheses nest at most MAX_QUERY_DEPTH deep,
 *   so parsing is linear in a bounded input and the recursion is shallow whoever sends the query.
 *
 * The parser only throws PermissionQueryError; the endpoint answers it with 400 `invalid_permission_query`.
 */
import { isPermission, Permission } from '../../roles/permissions';

export const MAX_QUERY_LENGTH = 1000;
export const MAX_QUERY_DEPTH = 16;

/**
 * A parsed query. `and`/`or` have at least two operands, none of them the same operator (nested runs of
 * one operator are flattened: `a AND (b AND c)` is `a AND b AND c`).
 */
export type PermissionQuery =
  | { readonly kind: 'permission'; readonly permission: Permission }
  | { readonly kind: 'and'; readonly operands: readonly PermissionQuery[] }
  | { readonly kind: 'or'; readonly operands: readonly PermissionQuery[] };

export class PermissionQueryError extends Error {
  constructor(
    message: string,
    /** 0-based offset in the query text the complaint is about, when there is one. */
    readonly position?: number,
  ) {
    super(message);
    this.name = 'PermissionQueryError';
  }
}

type Token =
  | { type: '(' | ')' | 'AND' | 'OR'; position: number }
  | { type: 'permission'; permission: Permission; position: number };

const WHITESPACE = /\s/;
/** Names longer than this are cut in messages: the message echoes the caller's text, never a lot of it. */
const SHOWN_NAME_LENGTH = 60;

function shown(word: string): string {
  return JSON.stringify(word.length > SHOWN_NAME_LENGTH ? `${word.slice(0, SHOWN_NAME_LENGTH)}…` : word);
}

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let index = 0;
  while (index < text.length) {
    const char = text[index];
    if (WHITESPACE.test(char)) {
      index += 1;
    } else if (char === '(' || char === ')') {
      tokens.push({ type: char, position: index });
      index += 1;
    } else {
      const start = index;
      while (
        index < text.length &&
        !WHITESPACE.test(text[index]) &&
        text[index] !== '(' &&
        text[index] !== ')'
      )
        index += 1;
      tokens.push(classify(text.slice(start, index), start));
    }
  }
  return tokens;
}

function classify(word: string, position: number): Token {
  if (word === 'AND' || word === 'OR') return { type: word, position };
  if (isPermission(word)) return { type: 'permission', permission: word, position };
  const upper = word.toUpperCase();
  if (upper === 'AND' || upper === 'OR') {
    throw new PermissionQueryError(
      `${shown(word)} at position ${position} is not an operator: write ${upper} in capitals`,
      position,
    );
  }
  throw new PermissionQueryError(`unknown permission ${shown(word)} at position ${position}`, position);
}

function describe(token: Token | undefined): string {
  if (!token) return 'the end of the query';
  return token.type === 'permission' ? `"${token.permission}"` : `"${token.type}"`;
}

class Parser {
  private next = 0;
  private depth = 0;

  constructor(
    private readonly tokens: readonly Token[],
    private readonly length: number,
  ) {}

  parse(): PermissionQuery {
    const query = this.or();
    const extra = this.tokens[this.next];
    if (extra) {
      throw new PermissionQueryError(
        extra.type === ')'
          ? `unbalanced ")" at position ${extra.position}`
          : `expected AND, OR or the end of the query at position ${extra.position}, found ${describe(extra)}`,
        extra.position,
      );
    }
    return query;
  }

  private or(): PermissionQuery {
    return this.run('OR', () => this.and());
  }

  private and(): PermissionQuery {
    return this.run('AND', () => this.primary());
  }

  /** operand (operator operand)*, flattening operands that are runs of the same operator. */
  private run(operator: 'AND' | 'OR', operand: () => PermissionQuery): PermissionQuery {
    const kind = operator === 'AND' ? 'and' : 'or';
    const operands: PermissionQuery[] = [];
    const add = (query: PermissionQuery) => {
      if (query.kind === kind) operands.push(...query.operands);
      else operands.push(query);
    };
    add(operand());
    while (this.tokens[this.next]?.type === operator) {
      this.next += 1;
      add(operand());
    }
    return operands.length === 1 ? operands[0] : { kind, operands };
  }

  private primary(): PermissionQuery {
    const token = this.tokens[this.next];
    if (token?.type === 'permission') {
      this.next += 1;
      return { kind: 'permission', permission: token.permission };
    }
    if (token?.type === '(') {
      if (this.depth >= MAX_QUERY_DEPTH) {
        throw new PermissionQueryError(
          `parentheses nest deeper than ${MAX_QUERY_DEPTH} levels at position ${token.position}`,
          token.position,
        );
      }
      this.next += 1;
      this.depth += 1;
      const inner = this.or();
      const close = this.tokens[this.next];
      if (close?.type !== ')') {
        throw new PermissionQueryError(
          close
            ? `expected ")" at position ${close.position}, found ${describe(close)}`
            : `unbalanced "(" at position ${token.position}: no ")" closes it`,
          close?.position ?? token.position,
        );
      }
      this.next += 1;
      this.depth -= 1;
      return inner;
    }
    const position = token?.position ?? this.length;
    throw new PermissionQueryError(
      `expected a permission or "(" at position ${position}, found ${describe(token)}`,
      position,
    );
  }
}

/** Parses a permission query, or throws PermissionQueryError saying what is wrong and where. */
export function parsePermissionQuery(text: string): PermissionQuery {
  if (text.length > MAX_QUERY_LENGTH) {
    throw new PermissionQueryError(
      `the permission query is ${text.length} characters long; at most ${MAX_QUERY_LENGTH} are allowed`,
    );
  }
  const tokens = tokenize(text);
  if (tokens.length === 0) throw new PermissionQueryError('the permission query is empty');
  return new Parser(tokens, text.length).parse();
}

/** Whether a credential holding `granted` satisfies the query. */
export function satisfies(query: PermissionQuery, granted: ReadonlySet<string>): boolean {
  switch (query.kind) {
    case 'permission':
      return granted.has(query.permission);
    case 'and':
      return query.operands.every((operand) => satisfies(operand, granted));
    case 'or':
      return query.operands.some((operand) => satisfies(operand, granted));
  }
}

/** The query written back as text, with only the parentheses it needs. */
export function formatPermissionQuery(query: PermissionQuery): string {
  switch (query.kind) {
    case 'permission':
      return query.permission;
    case 'and':
      return query.operands
        .map((operand) =>
          operand.kind === 'or' ? `(${formatPermissionQuery(operand)})` : formatPermissionQuery(operand),
        )
        .join(' AND ');
    case 'or':
      return query.operands.map(formatPermissionQuery).join(' OR ');
  }
}
