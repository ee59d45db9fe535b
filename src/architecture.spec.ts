import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import * as ts from 'typescript';

/**
 * Issue 42, "Boundaries": no provider or controller takes more than MAX_CONSTRUCTOR_DEPENDENCIES
 * constructor parameters. A class that needs more does more than one thing, and is split by what it
 * does (as DashboardSignIns / SessionRefreshes and TasksService / TaskEvents / TaskEnds were). Read with
 * the compiler's parser, not a regular expression: decorators, multi-line signatures and parameter
 * properties come out as they are.
 */
const MAX_CONSTRUCTOR_DEPENDENCIES = 8;
const NEST_CLASS_DECORATORS = new Set(['Injectable', 'Controller']);
const SRC = join(__dirname);

interface ConstructorDependencies {
  className: string;
  file: string;
  count: number;
}

/** Every .ts file under `dir` that is not a spec, as a path. */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') && !entry.name.endsWith('.d.ts')
      ? [path]
      : [];
  });
}

/** `@Injectable()` or `@Controller(...)` (the call form Nest's decorators take), by the decorator's name. */
function isNestClass(node: ts.ClassDeclaration): boolean {
  return (ts.getDecorators(node) ?? []).some((decorator) => {
    const expression = decorator.expression;
    return (
      ts.isCallExpression(expression) &&
      ts.isIdentifier(expression.expression) &&
      NEST_CLASS_DECORATORS.has(expression.expression.text)
    );
  });
}

/** The constructor parameters of each class decorated @Injectable() or @Controller(...) in `source`. */
function constructorDependencies(file: string, source: string): ConstructorDependencies[] {
  const sourceFile = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: ConstructorDependencies[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isClassDeclaration(node) && isNestClass(node)) {
      const constructor = node.members.find(ts.isConstructorDeclaration);
      found.push({
        className: node.name?.text ?? '(anonymous class)',
        file,
        count: constructor?.parameters.length ?? 0,
      });
    }
    ts.forEachChild(node, visit);
  };
  visit(sourceFile);
  return found;
}

/** The classes of `sources` above the limit, as "Name (file): N", for a failure that says where to look. */
function overTheLimit(sources: { file: string; source: string }[]): string[] {
  return sources
    .flatMap(({ file, source }) => constructorDependencies(file, source))
    .filter(({ count }) => count > MAX_CONSTRUCTOR_DEPENDENCIES)
    .map(({ className, file, count }) => `${className} (${file}): ${count} constructor dependencies`);
}

describe('architecture: constructor dependencies', () => {
  const sources = sourceFiles(SRC).map((path) => ({
    file: relative(join(SRC, '..'), path),
    source: readFileSync(path, 'utf8'),
  }));

  it(`finds no @Injectable() or @Controller() class with more than ${MAX_CONSTRUCTOR_DEPENDENCIES}`, () => {
    expect(overTheLimit(sources)).toEqual([]);
  });

  it('reads the classes of src/ (a parser that saw none would pass anything)', () => {
    const classes = sources.flatMap(({ file, source }) => constructorDependencies(file, source));
    expect(classes).toContainEqual({
      className: 'TasksService',
      file: join('src', 'tasks', 'tasks.service.ts'),
      count: 6,
    });
    expect(classes.length).toBeGreaterThan(50);
  });

  it('flags a 9-parameter injectable and a 9-parameter controller, and passes one of 8', () => {
    const params = (n: number): string =>
      Array.from({ length: n }, (_, i) => `private readonly d${i}: D${i}`).join(',\n    ');
    const source = `
      import { Controller, Inject, Injectable } from '@nestjs/common';
      @Injectable()
      export class TooBig {
        constructor(
          @Inject(CONFIG) config: Config,
          ${params(8)},
        ) {}
      }
      @Controller('v1/things')
      export class TooBigController {
        constructor(${params(9)}) {}
      }
      @Injectable()
      export class JustRight {
        constructor(${params(8)}) {}
      }
      export class NotAProvider {
        constructor(${params(12)}) {}
      }
    `;
    expect(overTheLimit([{ file: 'src/example.ts', source }])).toEqual([
      'TooBig (src/example.ts): 9 constructor dependencies',
      'TooBigController (src/example.ts): 9 constructor dependencies',
    ]);
  });
});
