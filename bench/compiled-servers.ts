/**
 * The bench's server processes run compiled, as a deployment runs dist/main.js, not under ts-node: ts-node
 * loads Node's REPL, and with it `domain`, which wraps the construction of every EventEmitter (two a
 * request: its IncomingMessage and its ServerResponse), about 1 µs a request in every server measured, the
 * bare baselines included. src/ and bench/ are transpiled file by file (as ts-node's transpile-only mode and
 * test/support/compiled-app.ts do) into a folder of the project, so that packages resolve from its
 * node_modules; `removeCompiledServers` removes it.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import * as ts from 'typescript';

const ROOT = resolve(__dirname, '..');
const OUTPUT = join(ROOT, `.bench-build-${process.pid}`);

/**
 * The environment a compiled Gatehouse needs to find what the ts-node one finds from its own files: the
 * dashboard's build is looked up two folders above src/config, which is the output folder once compiled.
 */
export const COMPILED_APP_ENV = { DASHBOARD_DIR: join(ROOT, 'dist', 'dashboard') };

let compiled = false;

/** The compiled file of `bench/<file>.ts` (compiling src/ and bench/ on the first call). */
export function compiledBenchFile(file: string): string {
  if (!compiled) {
    const { config } = ts.readConfigFile(join(ROOT, 'tsconfig.json'), ts.sys.readFile);
    const { options } = ts.convertCompilerOptionsFromJson(config.compilerOptions, ROOT);
    for (const source of [...sourceFiles(join(ROOT, 'src')), ...sourceFiles(join(ROOT, 'bench'))]) {
      const { outputText } = ts.transpileModule(readFileSync(source, 'utf8'), {
        fileName: source,
        compilerOptions: { ...options, sourceMap: false, inlineSourceMap: false },
      });
      const target = join(OUTPUT, relative(ROOT, source)).replace(/\.ts$/, '.js');
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, outputText);
    }
    compiled = true;
  }
  return join(OUTPUT, 'bench', file.replace(/\.ts$/, '.js'));
}

export function removeCompiledServers(): void {
  rmSync(OUTPUT, { recursive: true, force: true });
}

function sourceFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') ? [path] : [];
  });
}
