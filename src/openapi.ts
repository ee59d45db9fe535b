/**
 * `npm run openapi -- <file>`: builds, then writes the OpenAPI document exactly as the built service
 * serves it at /openapi.json (with the @nestjs/swagger plugin's types, so from dist/, not ts-node), from
 * an app booted on a throwaway embedded database: no server, no network, nothing listening. CI lints
 * the file with @redocly/cli (`npm run openapi:lint`).
 */
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppModule } from './app.module';
import { APP_OPTIONS, createOpenApiDocument } from './app.setup';
import { loadAppConfig } from './config/app-config';
import { EXTENSIONS } from './extensions';
import { StableShapeExpressAdapter } from './http/stable-shape.adapter';

async function main(): Promise<void> {
  const out = process.argv[2] ?? 'openapi.json';
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-openapi-'));
  try {
    const config = loadAppConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', WORKER_CONCURRENCY: '0' });
    const app = await NestFactory.create(
      AppModule.forRoot(config, EXTENSIONS),
      new StableShapeExpressAdapter(),
      {
        ...APP_OPTIONS,
        logger: false,
        abortOnError: false,
      },
    );
    await app.init();
    writeFileSync(out, `${JSON.stringify(createOpenApiDocument(app), null, 2)}\n`);
    await app.close();
    process.stdout.write(`wrote ${out}\n`);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
