// First: telemetry instruments http, pg and ioredis as they are first required (telemetry.ts).
import './telemetry/worker-telemetry';
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { EXTENSIONS } from './extensions';
import { AppLogger } from './logging/app-logger';
import { WorkerModule } from './worker.module';
import { loadConfigOrExit } from './main.config';
import { checkServersOrExit } from './main.preflight';
import { StopSignals } from './main.shutdown';
import { stopTelemetry } from './telemetry/telemetry';

/**
 * `npm run start:worker`: a process that only runs task workers (no HTTP), so work scales apart from
 * the API. Run the API with WORKER_CONCURRENCY=0 to leave all tasks to worker processes. Needs
 * DATABASE_URL: the embedded database serves a single process.
 */
async function main(): Promise<void> {
  const config = loadConfigOrExit();
  if (!config.DATABASE_URL) {
    console.error('start:worker needs DATABASE_URL: the embedded database can only be opened by one process');
    process.exit(1);
  }
  // Heard before the workers start (they claim tasks as the app boots): a stop then hands them back.
  const stops = new StopSignals(config.SHUTDOWN_GRACE_MS);
  await checkServersOrExit(config);
  const app = await NestFactory.createApplicationContext(WorkerModule.forRoot(config, EXTENSIONS), {
    bufferLogs: true,
  });
  app.useLogger(app.get(AppLogger));
  // The worker loops sleep on unref'd timers (so tests and shutdown never wait on them); with no HTTP
  // server in this process, something must keep it alive until SIGTERM.
  const keepAlive = setInterval(() => undefined, 60_000);
  // SIGTERM/SIGINT: the workers finish or hand back their tasks, the usage and audit entries that wait
  // are written, the database closes.
  stops.closeWith(async () => {
    clearInterval(keepAlive);
    await app.close();
    await stopTelemetry();
  });
}

main().catch((error: unknown) => {
  console.error('worker failed to start:', error);
  process.exit(1);
});
