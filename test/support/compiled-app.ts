import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import * as ts from 'typescript';
import { compiledAppDirectory } from './run-artifacts';

/**
 * Tests that start the real entry point (src/main.ts, src/worker.ts) as a process run it compiled once
 * per test run, file by file as ts-node's transpile-only mode would, instead of under ts-node: ts-node
 * compiles the whole app again in every process (about 7 s of CPU each), which made a suite of a dozen
 * processes the test run's longest file. The output sits one folder below the project, as dist/ does, so
 * paths the app takes relative to its own files (package.json, dist/dashboard) are the same.
 */

const ROOT = resolve(__dirname, '../..');
const SOURCE = join(ROOT, 'src');

/** The compiled file of an entry point, e.g. `compiledEntryPoint('main')`: run it with `node`. */
export function compiledEntryPoint(name: 'main' | 'worker'): string {
  const output = compiledAppDirectory();
  const entry = join(output, `${name}.js`);
  if (!existsSync(entry)) compileInto(output);
  return entry;
}

function compileInto(output: string): void {
  const { config } = ts.readConfigFile(join(ROOT, 'tsconfig.json'), ts.sys.readFile);
  const { options } = ts.convertCompilerOptionsFromJson(config.compilerOptions, ROOT);
  // Written in a folder of this process and renamed whole: another worker never runs half an app.
  const partial = `${output}.partial-${process.pid}`;
  rmSync(partial, { recursive: true, force: true });
  for (const file of sourceFiles(SOURCE)) {
    const { outputText } = ts.transpileModule(readFileSync(file, 'utf8'), {
      fileName: file,
      compilerOptions: { ...options, sourceMap: false, inlineSourceMap: false },
    });
    const target = join(partial, relative(SOURCE, file)).replace(/\.ts$/, '.js');
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, outputText);
  }
  try {
    renameSync(partial, output);
  } catch {
    // Another worker finished first: its copy is the same.
    rmSync(partial, { recursive: true, force: true });
  }
}

function sourceFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') ? [path] : [];
  });
}
