import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { runScope } from './test-database';

/**
 * Where a run keeps what it makes once for all its files: the compiled app (compiled-app.ts) and the
 * OpenAPI metadata (openapi-metadata.ts). Apart from the code that makes them, which loads TypeScript
 * and Nest, so that the global teardown removes them without loading either (a quarter of a second at
 * the end of every run).
 */

const ROOT = resolve(__dirname, '../..');

export function compiledAppDirectory(): string {
  return join(ROOT, `.test-build-${runScope()}`);
}

export function openApiMetadataDirectory(): string {
  return join(ROOT, 'test', '.generated', runScope());
}

/** Global teardown: the run's compiled app and metadata go with it. */
export function removeRunArtifacts(): void {
  for (const directory of [compiledAppDirectory(), openApiMetadataDirectory()]) {
    rmSync(directory, { recursive: true, force: true });
  }
}
