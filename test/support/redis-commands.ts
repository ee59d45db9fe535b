import type { INestApplication } from '@nestjs/common';
import type Redis from 'ioredis';
import { RedisConnection } from '../../src/redis/redis.connection';

/**
 * What `action` makes the app send to Redis about `ids` (a key's or identity's id in the command's
 * arguments), in order: `sent <command>` as the client writes it, `answered <command>` as its reply
 * arrives. A request's commands all sent before the first answer share one round trip.
 */
export async function redisCommandsAbout(
  app: INestApplication,
  ids: readonly string[],
  action: () => Promise<unknown>,
): Promise<string[]> {
  const redis: Redis = app.get(RedisConnection).client!;
  const events: string[] = [];
  const send = redis.sendCommand.bind(redis);
  const spy = jest.spyOn(redis, 'sendCommand').mockImplementation((command, ...rest) => {
    const args = command.args.map(String);
    if (ids.some((id) => args.some((arg) => arg.includes(id)))) {
      const label = `${command.name} ${args.filter((arg) => ids.some((id) => arg.includes(id))).join(' ')}`;
      events.push(`sent ${label}`);
      command.promise.then(
        () => events.push(`answered ${label}`),
        () => events.push(`failed ${label}`),
      );
    }
    return send(command, ...rest);
  });
  try {
    await action();
  } finally {
    spy.mockRestore();
  }
  return events;
}

/** The events' sends before the first answer: all of them when the commands shared one round trip. */
export function sentBeforeFirstAnswer(events: readonly string[]): string[] {
  const firstAnswer = events.findIndex((event) => !event.startsWith('sent '));
  return events.slice(0, firstAnswer < 0 ? events.length : firstAnswer);
}
