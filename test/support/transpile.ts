import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import * as ts from 'typescript';

const ROOT = resolve(__dirname, '../..');

/**
 * Each of `files` transpiled on its own, as ts-node's transpile-only mode does, with the project's
 * compiler options (no source maps), written to `target(file)`. For processes that should run the app
 * compiled rather than under ts-node (test/support/compiled-app.ts, bench/compiled-servers.ts).
 */
export function transpileFiles(files: readonly string[], target: (file: string) => string): void {
  const { config } = ts.readConfigFile(join(ROOT, 'tsconfig.json'), ts.sys.readFile);
  const { options } = ts.convertCompilerOptionsFromJson(config.compilerOptions, ROOT);
  for (const file of files) {
    const { outputText } = ts.transpileModule(readFileSync(file, 'utf8'), {
      fileName: file,
      compilerOptions: { ...options, sourceMap: false, inlineSourceMap: false },
    });
    const output = target(file);
    mkdirSync(dirname(output), { recursive: true });
    writeFileSync(output, outputText);
  }
}

/** The TypeScript files under `directory`, specs left out. */
export function sourceFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') ? [path] : [];
  });
}
