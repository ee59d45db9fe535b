import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { Server } from 'node:http';
import { AppModule } from './app.module';
import { EXTENSIONS } from './extensions';
import { APP_OPTIONS, configureApp } from './app.setup';
import { loadConfigOrExit } from './main.config';
import { checkServersOrExit } from './main.preflight';
import { logStartBanner } from './start-banner';
import { StableShapeExpressAdapter } from './http/stable-shape.adapter';

async function main(): Promise<void> {
  const config = loadConfigOrExit();
  await checkServersOrExit(config);
  const app = await NestFactory.create(
    AppModule.forRoot(config, EXTENSIONS),
    new StableShapeExpressAdapter(),
    APP_OPTIONS,
  );
  configureApp(app);
  await app.listen(config.PORT, config.HOST);
  // PORT=0 asks the system for a free port: the banner shows the one it gave.
  const address = (app.getHttpServer() as Server).address();
  await logStartBanner(app, config, typeof address === 'object' && address ? address.port : config.PORT);

  // SIGTERM/SIGINT: stop accepting, let in-flight requests finish, then close the database and exit 0.
  // Nest's own shutdown hooks would re-raise the signal and exit 143, so the sequence is ours.
  let stopping = false;
  const stop = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    const deadline = setTimeout(() => {
      console.error(`shutdown after ${signal} took longer than ${config.SHUTDOWN_GRACE_MS} ms; exiting`);
      process.exit(1);
    }, config.SHUTDOWN_GRACE_MS);
    deadline.unref();
    const server = app.getHttpServer() as Server;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await app.close();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
}

main().catch((error: unknown) => {
  console.error('failed to start:', error);
  process.exit(1);
});
