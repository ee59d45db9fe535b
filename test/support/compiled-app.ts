import { existsSync, renameSync, rmSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { compiledAppDirectory } from './run-artifacts';
import { sourceFiles, transpileFiles } from './transpile';

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
  // Written in a folder of this process and renamed whole: another worker never runs half an app.
  const partial = `${output}.partial-${process.pid}`;
  rmSync(partial, { recursive: true, force: true });
  transpileFiles(sourceFiles(SOURCE), (file) =>
    join(partial, relative(SOURCE, file)).replace(/\.ts$/, '.js'),
  );
  try {
    renameSync(partial, output);
  } catch {
    // Another worker finished first: its copy is the same.
    rmSync(partial, { recursive: true, force: true });
  }
}
