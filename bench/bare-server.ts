/**
 * The baseline of `npm run bench:verify`: a bare NestJS app (one route, platform-express, no guards,
 * no logger) in a process of its own, so it shares nothing with Gatehouse but the machine. Reports
 * its URL over IPC, answers `cpu` with its CPU time, exits on `exit`.
 */
import 'reflect-metadata';
import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';

@Controller()
class BareController {
  @Get('bare')
  bare(): { ok: boolean } {
    return { ok: true };
  }
}

@Module({ controllers: [BareController] })
class BareModule {}

async function main(): Promise<void> {
  const app = await NestFactory.create(BareModule, { logger: false, abortOnError: false });
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
