import { SwaggerModule } from '@nestjs/swagger';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { openApiMetadataDirectory } from './run-artifacts';

/**
 * The OpenAPI document's property types come from the @nestjs/swagger CLI plugin, which reads the whole
 * program's types. `nest build` runs it as a compiler transformer; the tests compile each file alone (no
 * program: seconds instead of tens of seconds per jest worker), so a test that reads the document loads
 * the plugin's metadata the way Nest documents for builds without tsc (its SWC recipe): the CLI's
 * PluginMetadataGenerator writes it once per run, SwaggerModule.loadPluginMetadata applies it, and the
 * document is the one `nest build` serves.
 */

const ROOT = resolve(__dirname, '../..');
const FILE_NAME = 'openapi-metadata.ts';
const WAIT_FOR_OTHER_WORKER_MS = 120_000;

type PluginMetadata = () => Promise<Record<string, unknown>>;

/** Call before the first request for /openapi.json (or /docs) in a test file that reads the document. */
export async function loadOpenApiMetadata(): Promise<void> {
  const file = await generatedMetadataFile();
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const metadata = (require(file) as { default: PluginMetadata }).default;
  await SwaggerModule.loadPluginMetadata(metadata);
}

/** The run's metadata file: written by the first worker that needs it; the others wait for it. */
async function generatedMetadataFile(): Promise<string> {
  const directory = openApiMetadataDirectory();
  const file = join(directory, FILE_NAME);
  if (existsSync(file)) return file;
  mkdirSync(dirname(directory), { recursive: true });
  try {
    mkdirSync(directory);
  } catch {
    // Another worker is writing it.
    const deadline = Date.now() + WAIT_FOR_OTHER_WORKER_MS;
    while (!existsSync(file)) {
      if (Date.now() > deadline) throw new Error(`no OpenAPI metadata in ${directory} after 2 minutes`);
      await sleep(200);
    }
    return file;
  }
  try {
    generate(directory);
  } catch (error) {
    // Nobody waits for a file that will not come.
    rmSync(directory, { recursive: true, force: true });
    throw error;
  }
  return file;
}

/**
 * Runs the plugin over the app (src/, what `nest build` compiles) with the options `nest build` uses. Not the
 * example extensions: the metadata imports every file it describes, and an extension's declarations must
 * not load into an app that was started without it.
 */
function generate(directory: string): void {
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { PluginMetadataGenerator } =
    require('@nestjs/cli/lib/compiler/plugins/plugin-metadata-generator') as typeof import('@nestjs/cli/lib/compiler/plugins/plugin-metadata-generator');
  type Visitor = Parameters<InstanceType<typeof PluginMetadataGenerator>['generate']>[0]['visitors'][number];
  const { ReadonlyVisitor } = require('@nestjs/swagger/plugin') as {
    ReadonlyVisitor: new (options: Record<string, unknown>) => Visitor;
  };
  const { options } = (
    require('../../nest-cli.json') as {
      compilerOptions: { plugins: { name: string; options: Record<string, unknown> }[] };
    }
  ).compilerOptions.plugins.find((plugin) => plugin.name === '@nestjs/swagger')!;
  /* eslint-enable @typescript-eslint/no-require-imports */
  // Written under another name and renamed: a waiting worker never reads half a file.
  const partial = `${FILE_NAME.replace(/\.ts$/, '')}.partial.ts`;
  new PluginMetadataGenerator().generate({
    visitors: [new ReadonlyVisitor({ ...options, pathToSource: directory })],
    outputDir: directory,
    filename: partial,
    watch: false,
    // The generator reads it relative to the working directory.
    tsconfigPath: relative(process.cwd(), join(ROOT, 'tsconfig.openapi.json')),
    printDiagnostics: false,
  });
  renameSync(join(directory, partial), join(directory, FILE_NAME));
}
