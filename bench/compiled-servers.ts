/**
 * The bench's server processes run compiled, as a deployment runs dist/main.js, not under ts-node: ts-node
 * loads Node's REPL, and with it `domain`, which wraps the construction of every EventEmitter (two a
 * request: its IncomingMessage and its ServerResponse), about 1 µs a request in every server measured, the
 * bare baselines included. src/ and bench/ are transpiled file by file (test/support/transpile.ts, as
 * test/support/compiled-app.ts does for the app) into a folder of the project, so that packages resolve from its
 * node_modules; `removeCompiledServers` removes it.
 */
import { rmSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { sourceFiles, transpileFiles } from '../test/support/transpile';

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
    const sources = [...sourceFiles(join(ROOT, 'src')), ...sourceFiles(join(ROOT, 'bench'))];
    transpileFiles(sources, (source) => join(OUTPUT, relative(ROOT, source)).replace(/\.ts$/, '.js'));
    compiled = true;
  }
  return join(OUTPUT, 'bench', file.replace(/\.ts$/, '.js'));
}

export function removeCompiledServers(): void {
  rmSync(OUTPUT, { recursive: true, force: true });
}
