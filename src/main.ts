// First: telemetry instruments http, pg and ioredis as they are first required (telemetry.ts).
import './telemetry/api-telemetry';
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { Server } from 'node:http';
import { AppModule } from './app.module';
import { EXTENSIONS } from './extensions';
import { APP_OPTIONS, configureApp } from './app.setup';
import { loadConfigOrExit } from './main.config';
import { checkServersOrExit } from './main.preflight';
import { StopSignals } from './main.shutdown';
import { logStartBanner } from './start-banner';
import { StableShapeExpressAdapter } from './http/stable-shape.adapter';
import { ShutdownDrain } from './common/shutdown-drain';
import { stopTelemetry } from './telemetry/telemetry';

async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const stops = new StopSignals(config.SHUTDOWN_GRACE_MS);
  await checkServersOrExit(config);
  const app = await NestFactory.create(
    AppModule.forRoot(config, EXTENSIONS),
    new StableShapeExpressAdapter(),
    APP_OPTIONS,
  );
  configureApp(app);
  let listening: Promise<unknown> = Promise.resolve();
  // SIGTERM: drain (readiness 503 for SHUTDOWN_DRAIN_MS, still serving); then, as on SIGINT, stop
  // accepting, let in-flight requests finish, then close the app (its hooks write the usage and audit
  // entries that wait, and the workers hand their running tasks back) and the database.
  stops.closeWith(async (signal) => {
    // A listen under way finishes first, so that the port it opens is closed too.
    await listening.catch(() => undefined);
    const server = app.getHttpServer() as Server;
    if (server.listening) {
      const drain = app.get(ShutdownDrain);
      if (signal === 'SIGTERM') await drain.drain(server, config.SHUTDOWN_DRAIN_MS);
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Waits and streams answer now: the server waits for what is in flight, and they would hold it.
      drain.releaseRequests();
      await closed;
    }
    await app.close();
    await stopTelemetry();
  });
  // Asked to stop while it started: it closes without listening (or, once listening, without a banner).
  if (stops.requested) return;
  listening = app.listen(config.PORT, config.HOST);
  await listening;
  if (stops.requested) return;
  // PORT=0 asks the system for a free port: the banner shows the one it gave.
  const address = (app.getHttpServer() as Server).address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  // A stop that came meanwhile may close the database under the banner's query: the stop decides how the
  // process ends, not a start that failed because of it.
  await logStartBanner(app, config, port).catch((error: unknown) => {
    if (!stops.requested) throw error;
  });
}

main().catch((error: unknown) => {
  console.error('failed to start:', error);
  process.exit(1);
});
