/**
 * The baseline of `npm run bench:verify`: a bare NestJS app (one route, platform-express, no guards
 * unless BARE_GUARDS says, no logger) in a process of its own, so it shares nothing with Gatehouse but the
 * machine. BARE_SHAPE=stable serves it through the same StableShapeExpressAdapter as Gatehouse (one hidden
 * class for all requests), the fair baseline for Gatehouse's own figures; the default is Nest's adapter.
 * Reports its URL over IPC, answers `cpu` with its CPU time, exits on `exit`.
 */
import 'reflect-metadata';
import { CanActivate, Controller, Get, Injectable, Module } from '@nestjs/common';
import { APP_GUARD, NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { StableShapeExpressAdapter } from '../src/http/stable-shape.adapter';

@Controller()
class BareController {
  @Get('bare')
  bare(): { ok: boolean } {
    return { ok: true };
  }
}

/** A guard with no work at all, async like the key check's three. */
@Injectable()
class PassGuard implements CanActivate {
  async canActivate(): Promise<boolean> {
    return true;
  }
}

// BARE_GUARDS=n: the same app with n global guards that do nothing: the cost of the design's shape
// (Nest running three global guards) before any key check work.
const guards = Number(process.env.BARE_GUARDS ?? 0);

@Module({
  controllers: [BareController],
  providers: Array.from({ length: guards }, () => ({ provide: APP_GUARD, useClass: PassGuard })),
})
class BareModule {}

async function main(): Promise<void> {
  const adapter =
    process.env.BARE_SHAPE === 'stable' ? new StableShapeExpressAdapter() : new ExpressAdapter();
  const app = await NestFactory.create(BareModule, adapter, { logger: false, abortOnError: false });
  await app.listen(0, '127.0.0.1');
  process.on('message', (message: { type: string }) => {
    if (message.type === 'cpu') {
      const { user, system } = process.cpuUsage();
      process.send!({ type: 'cpu', micros: user + system });
    }
    if (message.type === 'exit') void app.close().then(() => process.exit(0));
  });
  process.send!({ type: 'ready', url: (await app.getUrl()).replace('[::1]', '127.0.0.1') });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
