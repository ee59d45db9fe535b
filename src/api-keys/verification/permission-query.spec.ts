import fc from 'fast-check';
// Every core module's declarations, so the catalogue holds the permissions a query may name.
import '../../core.declarations';
import { allPermissions, Permission } from '../../roles/permissions';
import {
  formatPermissionQuery,
  MAX_QUERY_DEPTH,
  MAX_QUERY_LENGTH,
  parsePermissionQuery,
  PermissionQuery,
  PermissionQueryError,
  satisfies,
} from './permission-query';

const perm = (permission: string): PermissionQuery => ({
  kind: 'permission',
  permission: permission as Permission,
});
const and = (...operands: PermissionQuery[]): PermissionQuery => ({ kind: 'and', operands });
const or = (...operands: PermissionQuery[]): PermissionQuery => ({ kind: 'or', operands });

const refusal = (text: string): PermissionQueryError => {
  try {
    parsePermissionQuery(text);
  } catch (error) {
    if (error instanceof PermissionQueryError) return error;
    throw error;
  }
  throw new Error(`"${text}" was accepted`);
};

const holds = (query: string, ...granted: string[]) =>
  satisfies(parsePermissionQuery(query), new Set(granted));

describe('parsePermissionQuery', () => {
  it('reads a single permission', () => {
    expect(parsePermissionQuery('agents:read')).toEqual(perm('agents:read'));
  });

  it('reads the contract example', () => {
    expect(parsePermissionQuery('agents:read AND (tasks:create OR tasks:execute)')).toEqual(
      and(perm('agents:read'), or(perm('tasks:create'), perm('tasks:execute'))),
    );
  });

  it('binds AND tighter than OR, on either side', () => {
    expect(parsePermissionQuery('agents:read OR tasks:create AND tasks:execute')).toEqual(
      or(perm('agents:read'), and(perm('tasks:create'), perm('tasks:execute'))),
    );
    expect(parsePermissionQuery('agents:read AND tasks:create OR tasks:execute')).toEqual(
      or(and(perm('agents:read'), perm('tasks:create')), perm('tasks:execute')),
    );
  });

  it('lets parentheses override precedence', () => {
    expect(parsePermissionQuery('(agents:read OR tasks:create) AND tasks:execute')).toEqual(
      and(or(perm('agents:read'), perm('tasks:create')), perm('tasks:execute')),
    );
  });

  it('flattens runs of one operator, however they are parenthesised', () => {
    const flat = and(perm('agents:read'), perm('tasks:read'), perm('files:read'));
    expect(parsePermissionQuery('agents:read AND tasks:read AND files:read')).toEqual(flat);
    expect(parsePermissionQuery('agents:read AND (tasks:read AND files:read)')).toEqual(flat);
    expect(parsePermissionQuery('((agents:read AND tasks:read)) AND files:read')).toEqual(flat);
  });

  it('ignores whitespace of any kind and amount, and needs none next to a parenthesis', () => {
    const expected = and(perm('agents:read'), or(perm('tasks:create'), perm('tasks:execute')));
    expect(parsePermissionQuery('  agents:read\tAND\n(tasks:create   OR\r\ntasks:execute)  ')).toEqual(
      expected,
    );
    expect(parsePermissionQuery('agents:read AND(tasks:create OR tasks:execute)')).toEqual(expected);
    expect(parsePermissionQuery('(agents:read)AND(tasks:create OR tasks:execute)')).toEqual(expected);
  });

  it('accepts redundant parentheses around a permission or the whole query', () => {
    expect(parsePermissionQuery('((agents:read))')).toEqual(perm('agents:read'));
    expect(parsePermissionQuery('(agents:read OR (tasks:read))')).toEqual(
      or(perm('agents:read'), perm('tasks:read')),
    );
  });

  describe('refuses', () => {
    it.each([
      ['an empty query', '', /empty/],
      ['a query of only whitespace', ' \t\n ', /empty/],
      ['a leading operator', 'AND agents:read', /expected a permission or "\(" at position 0, found "AND"/],
      [
        'a dangling operator',
        'agents:read AND',
        /expected a permission or "\(" at position 15, found the end/,
      ],
      ['two operators in a row', 'agents:read OR AND tasks:read', /position 15, found "AND"/],
      [
        'two permissions without an operator',
        'agents:read tasks:read',
        /expected AND, OR .* found "tasks:read"/,
      ],
      ['an unclosed parenthesis', '(agents:read OR tasks:read', /unbalanced "\(" at position 0/],
      ['a stray closing parenthesis', 'agents:read)', /unbalanced "\)" at position 11/],
      ['empty parentheses', '()', /expected a permission or "\(" at position 1, found "\)"/],
      [
        'an unknown permission',
        'agents:read AND agents:fly',
        /unknown permission "agents:fly" at position 16/,
      ],
      ['a name that is not a permission at all', 'everything', /unknown permission "everything"/],
      ['a wildcard', 'agents:*', /unknown permission "agents:\*"/],
      ['a permission in the wrong case', 'Agents:Read', /unknown permission "Agents:Read"/],
      [
        'lowercase and',
        'agents:read and tasks:read',
        /"and" at position 12 is not an operator: write AND in capitals/,
      ],
      ['mixed-case Or', 'agents:read Or tasks:read', /"Or" .* write OR in capitals/],
      ['an operator glued to a name', 'agents:readAND tasks:read', /unknown permission "agents:readAND"/],
      ['other operator spellings', 'agents:read && tasks:read', /unknown permission "&&"/],
    ])('%s', (_, text, message) => {
      expect(refusal(text).message).toMatch(message);
    });

    it(`a query longer than ${MAX_QUERY_LENGTH} characters, before reading it`, () => {
      const long = Array.from({ length: 100 }, () => 'agents:read').join(' OR ');
      expect(long.length).toBeGreaterThan(MAX_QUERY_LENGTH);
      expect(refusal(long).message).toMatch(/at most 1000/);
      expect(refusal('x'.repeat(MAX_QUERY_LENGTH + 1)).message).toMatch(/at most 1000/);
    });

    it(`parentheses nested deeper than ${MAX_QUERY_DEPTH}`, () => {
      const nested = (depth: number) => `${'('.repeat(depth)}agents:read${')'.repeat(depth)}`;
      expect(parsePermissionQuery(nested(MAX_QUERY_DEPTH))).toEqual(perm('agents:read'));
      expect(refusal(nested(MAX_QUERY_DEPTH + 1)).message).toMatch(/nest deeper than 16/);
      expect(refusal('('.repeat(500)).message).toMatch(/nest deeper/);
    });

    it('without echoing a long name in full', () => {
      const message = refusal(`agents:${'x'.repeat(500)}`).message;
      expect(message.length).toBeLessThan(120);
    });

    it('with the position of the complaint', () => {
      expect(refusal('agents:read AND nope').position).toBe(16);
      expect(refusal('agents:read AND').position).toBe(15);
    });
  });
});

describe('satisfies', () => {
  it('holds a single permission when granted', () => {
    expect(holds('agents:read', 'agents:read')).toBe(true);
    expect(holds('agents:read', 'agents:create')).toBe(false);
    expect(holds('agents:read')).toBe(false);
  });

  it('needs every operand of AND and one of OR', () => {
    const query = 'agents:read AND (tasks:create OR tasks:execute)';
    expect(holds(query, 'agents:read', 'tasks:execute')).toBe(true);
    expect(holds(query, 'agents:read', 'tasks:create', 'tasks:execute')).toBe(true);
    expect(holds(query, 'agents:read')).toBe(false);
    expect(holds(query, 'tasks:create', 'tasks:execute')).toBe(false);
  });

  it('follows precedence: a OR b AND c is a OR (b AND c)', () => {
    expect(holds('agents:read OR tasks:create AND tasks:execute', 'agents:read')).toBe(true);
    expect(holds('agents:read OR tasks:create AND tasks:execute', 'tasks:create')).toBe(false);
    expect(holds('(agents:read OR tasks:create) AND tasks:execute', 'agents:read')).toBe(false);
  });
});

describe('formatPermissionQuery', () => {
  it('writes only the parentheses precedence needs', () => {
    expect(
      formatPermissionQuery(parsePermissionQuery('((agents:read)) AND ((tasks:create OR (tasks:execute)))')),
    ).toBe('agents:read AND (tasks:create OR tasks:execute)');
    expect(
      formatPermissionQuery(parsePermissionQuery('(agents:read AND tasks:create) OR tasks:execute')),
    ).toBe('agents:read AND tasks:create OR tasks:execute');
  });
});

// --- Property tests ----------------------------------------------------------------------------------

/** A query tree as a test writes it: nothing flattened, so the parser's flattening is part of what is checked. */
type Tree = { permission: string } | { operator: 'AND' | 'OR'; operands: Tree[] };

/** The obvious evaluator, over the unflattened tree. */
function referenceEvaluate(tree: Tree, granted: ReadonlySet<string>): boolean {
  if ('permission' in tree) return granted.has(tree.permission);
  const results = tree.operands.map((operand) => referenceEvaluate(operand, granted));
  return tree.operator === 'AND' ? results.every(Boolean) : results.some(Boolean);
}

/** What the parser should give for a tree: nested runs of one operator flattened. */
function normalize(tree: Tree): PermissionQuery {
  if ('permission' in tree) return perm(tree.permission);
  const kind = tree.operator === 'AND' ? 'and' : 'or';
  const operands = tree.operands
    .map(normalize)
    .flatMap((operand) => (operand.kind === kind ? operand.operands : [operand]));
  return { kind, operands };
}

const PERMISSIONS = allPermissions();
const whitespace = fc
  .array(fc.constantFrom(' ', '  ', '\t', '\n', '\r\n'), { maxLength: 2 })
  .map((parts) => parts.join(''));

/** Joins two pieces of query text with random whitespace, adding a space only where a token needs one. */
function join(left: string, gap: string, right: string): string {
  const needsGap = !/[()]$/.test(left) && !/^[()]/.test(right);
  return `${left}${gap === '' && needsGap ? ' ' : gap}${right}`;
}

interface Written {
  tree: Tree;
  text: string;
}

/** Writes a tree (depth at most 3) as text with random whitespace and random redundant parentheses. */
const writtenTree: fc.Arbitrary<Written> = fc.letrec<{ written: Written; branch: Written }>((tie) => ({
  written: fc.oneof(
    { maxDepth: 3, depthIdentifier: 'query' },
    fc.constantFrom(...PERMISSIONS).map((permission) => ({ tree: { permission }, text: permission })),
    tie('branch'),
  ),
  branch: fc
    .record({
      operator: fc.constantFrom('AND' as const, 'OR' as const),
      operands: fc.array(
        fc.record({
          written: tie('written'),
          wrap: fc.boolean(),
          inside: fc.tuple(whitespace, whitespace),
          gaps: fc.tuple(whitespace, whitespace),
        }),
        { minLength: 2, maxLength: 4, depthIdentifier: 'query' },
      ),
    })
    .map(({ operator, operands }) => {
      const texts = operands.map(({ written, wrap, inside: [before, after] }) => {
        // An OR inside an AND needs its parentheses; any other operand may get redundant ones.
        const needed = operator === 'AND' && 'operator' in written.tree && written.tree.operator === 'OR';
        return needed || wrap ? `(${before}${written.text}${after})` : written.text;
      });
      const text = texts.reduce((left, right, index) => {
        const [gapBefore, gapAfter] = operands[index].gaps;
        return join(join(left, gapBefore, operator), gapAfter, right);
      });
      return { tree: { operator, operands: operands.map(({ written }) => written.tree) }, text };
    }),
})).written;

const writtenQuery = fc
  .tuple(writtenTree, whitespace, whitespace, fc.boolean())
  .map(([written, before, after, wrap]) => ({
    tree: written.tree,
    text: `${before}${wrap ? `(${written.text})` : written.text}${after}`,
  }))
  .filter(({ text }) => text.length <= MAX_QUERY_LENGTH);

const grantedSet = fc.uniqueArray(fc.constantFrom(...PERMISSIONS)).map((list) => new Set<string>(list));

describe('permission queries, property-tested', () => {
  it('a random tree written as text, with random whitespace and parentheses, parses back to the same tree', () => {
    fc.assert(
      fc.property(writtenQuery, ({ tree, text }) => {
        expect(parsePermissionQuery(text)).toEqual(normalize(tree));
      }),
      { numRuns: 1000 },
    );
  });

  it('the evaluator agrees with the reference evaluator for random granted sets', () => {
    fc.assert(
      fc.property(writtenQuery, grantedSet, ({ tree, text }, granted) => {
        expect(satisfies(parsePermissionQuery(text), granted)).toBe(referenceEvaluate(tree, granted));
      }),
      { numRuns: 1000 },
    );
  });

  it('formatting a parsed query and parsing it again gives the same query', () => {
    fc.assert(
      fc.property(writtenQuery, ({ text }) => {
        const query = parsePermissionQuery(text);
        expect(parsePermissionQuery(formatPermissionQuery(query))).toEqual(query);
      }),
      { numRuns: 500 },
    );
  });

  /** Anything the parser does with a string: a query or its own refusal, never another error. */
  const parsesOrRefuses = (text: string) => {
    try {
      parsePermissionQuery(text);
    } catch (error) {
      expect(error).toBeInstanceOf(PermissionQueryError);
      expect((error as PermissionQueryError).message.length).toBeGreaterThan(0);
    }
  };

  it('random strings give a query or a PermissionQueryError, never another error', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 1200 }), parsesOrRefuses), {
      numRuns: 2000,
    });
  });

  it('random sequences of query tokens give a query or a PermissionQueryError, never another error', () => {
    const token = fc.oneof(
      fc.constantFrom('(', ')', ' ', '\t', 'AND', 'OR', 'and', 'or', 'agents:fly', ':', ''),
      fc.constantFrom(...PERMISSIONS),
    );
    fc.assert(
      fc.property(fc.array(token, { maxLength: 300 }), fc.constantFrom('', ' '), (tokens, separator) =>
        parsesOrRefuses(tokens.join(separator)),
      ),
      { numRuns: 2000 },
    );
  });
});
