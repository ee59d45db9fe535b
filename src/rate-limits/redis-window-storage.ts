import type { ThrottlerStorage } from '@nestjs/throttler';
import type Redis from 'ioredis';
import { RedisOutagePolicy } from './redis-outage';
import type { WindowBatchCounter, WindowCount, WindowToCount } from './window-counter';

/** A Lua script defined on the connection, called with the number of keys first. */
type WindowScriptCall = (numberOfKeys: number, ...keysThenArgs: (string | number)[]) => Promise<number[]>;

/**
 * What the Redis storages share, whichever way they count (fixed or sliding): one script call counts
 * every window of a request (keys under the storage's own prefix, a ttl and a limit per window), in one
 * round trip, atomically across instances; a Redis that cannot answer gets the outage policy (open or
 * closed). A subclass gives the script and reads its answer.
 */
export abstract class RedisWindowStorage implements ThrottlerStorage, WindowBatchCounter {
  private readonly outage: RedisOutagePolicy;
  private readonly script: WindowScriptCall;

  /**
   * `command`: the name the script is defined under (one per storage kind); `prefix`: its keys' prefix,
   * distinct per kind, so switching kinds never misreads the other kind's counts.
   */
  protected constructor(
    redis: Redis,
    failureMode: 'open' | 'closed',
    command: string,
    lua: string,
    private readonly prefix: string,
  ) {
    this.outage = new RedisOutagePolicy(failureMode);
    // The number of keys varies (numberOfKeys omitted): it is the first argument of every call.
    redis.defineCommand(command, { lua });
    const defined = (redis as unknown as Record<string, WindowScriptCall>)[command];
    this.script = defined.bind(redis);
  }

  async increment(
    key: string,
    ttl: number,
    limit: number,
    _block: number,
    name: string,
  ): Promise<WindowCount> {
    const [count] = await this.countWindows([{ key, ttl, limit, name }]);
    return count;
  }

  async countWindows(windows: readonly WindowToCount[]): Promise<WindowCount[]> {
    const keys = windows.map(({ key, name }) => `${this.prefix}${name}:${key}`);
    const args = windows.flatMap(({ ttl, limit }) => [ttl, limit]);
    try {
      return this.countsOf(await this.script(windows.length, ...keys, ...args), windows);
    } catch (error) {
      return this.outage.countsOf(windows, error as Error);
    }
  }

  /** The script's answer as one count per window it counted, in order. */
  protected abstract countsOf(answer: number[], windows: readonly WindowToCount[]): WindowCount[];
}
