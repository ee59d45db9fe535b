import type { ThrottlerStorage } from '@nestjs/throttler';
import type Redis from 'ioredis';
import { RedisOutagePolicy } from './redis-outage';
import type { WindowBatchCounter, WindowCount, WindowToCount } from './window-counter';

/** A Lua script defined on the connection, called with the number of keys first. */
type WindowScriptCall = (numberOfKeys: number, ...keysThenArgs: (string | number)[]) => Promise<number[]>;

/**
 * The most requests one script run counts: a run holds Redis for its length, so a flood of one key's
 * requests in one turn is split into runs of this many.
 */
const MAX_REQUESTS_PER_RUN = 500;

/**
 * Put before every storage's script: the loop that counts a run's requests and lays out its answer, which
 * `countGroup` reads. `count_requests(n, windows, count_window)` counts `n` requests one after the other,
 * each in every window in turn up to and including the first that refuses it; for each request the answer
 * holds the number of windows counted, then what `count_window(window, counts)` appended for each (the
 * storage's `valuesPerWindow` numbers). `count_window` returns true when the window refused the request.
 */
const COUNT_REQUESTS_LUA = `
local function count_requests(n, windows, count_window)
  local counts = {}
  for r = 1, n do
    local at = #counts + 1
    counts[at] = 0
    for i = 1, #windows do
      counts[at] = i
      if count_window(windows[i], counts) then break end
    end
  end
  return counts
end
`;

/** Requests waiting, in one turn of the event loop, for the same windows of the same key. */
interface WindowGroup {
  windows: readonly WindowToCount[];
  waiting: { resolve: (counts: WindowCount[]) => void; reject: (error: unknown) => void }[];
}

/**
 * What the Redis storages share, whichever way they count (fixed or sliding): one script call counts
 * every window of a request (keys under the storage's own prefix, a ttl and a limit per window), in one
 * round trip, atomically across instances; a Redis that cannot answer gets the outage policy (open or
 * closed). A subclass gives the script and reads its answer.
 *
 * The requests of one turn of the event loop that count the same windows (a hot key's: a service
 * verifying its callers thousands of times a second) share one call: the script counts them one after
 * the other, in the order they arrived, each up to its first spent window, exactly as that many calls
 * in a row would, and answers each its own counts. Alone, a request waits no longer than a
 * setImmediate. So a hot key costs Redis (which shares the machine's cores) one script run per turn, not
 * one per request. Script arguments: the number of requests, then a ttl and a limit per window; answer:
 * per request, the number of windows counted, then `valuesPerWindow` numbers for each.
 */
export abstract class RedisWindowStorage implements ThrottlerStorage, WindowBatchCounter {
  private readonly outage: RedisOutagePolicy;
  private readonly script: WindowScriptCall;
  private pending = new Map<string, WindowGroup>();
  /** Groups of this turn that reached MAX_REQUESTS_PER_RUN, counted before the ones still open. */
  private full: WindowGroup[] = [];
  private flushScheduled = false;

  /** How many numbers the script answers per window counted. */
  protected abstract readonly valuesPerWindow: number;

  /**
   * `command`: the name the script is defined under (one per storage kind); `lua`: the script, which
   * counts its requests with `count_requests` (COUNT_REQUESTS_LUA); `prefix`: its keys' prefix,
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
    redis.defineCommand(command, { lua: `${COUNT_REQUESTS_LUA}${lua}` });
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

  countWindows(windows: readonly WindowToCount[]): Promise<WindowCount[]> {
    // Same keys and the same limits: a limit changed by a key update meanwhile is a group of its own.
    let signature = '';
    for (const { key, name, ttl, limit } of windows) signature += `${name}:${key} ${ttl} ${limit}\n`;
    return new Promise((resolve, reject) => {
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
      const group = this.pending.get(signature);
      if (!group) {
        this.pending.set(signature, { windows, waiting: [{ resolve, reject }] });
        return;
      }
      group.waiting.push({ resolve, reject });
      if (group.waiting.length < MAX_REQUESTS_PER_RUN) return;
      this.full.push(group);
      this.pending.delete(signature);
    });
  }

  private flush(): void {
    this.flushScheduled = false;
    const groups = [...this.full, ...this.pending.values()];
    this.full = [];
    this.pending = new Map();
    for (const group of groups) void this.countGroup(group);
  }

  private async countGroup({ windows, waiting }: WindowGroup): Promise<void> {
    const keys = windows.map(({ key, name }) => `${this.prefix}${name}:${key}`);
    const args = windows.flatMap(({ ttl, limit }) => [ttl, limit]);
    let answer: number[];
    try {
      answer = await this.script(windows.length, ...keys, waiting.length, ...args);
    } catch (error) {
      for (const { resolve, reject } of waiting) {
        try {
          resolve(this.outage.countsOf(windows, error as Error));
        } catch (refusal) {
          reject(refusal);
        }
      }
      return;
    }
    let at = 0;
    for (const { resolve } of waiting) {
      const end = at + 1 + answer[at] * this.valuesPerWindow;
      resolve(this.countsOf(answer.slice(at + 1, end), windows));
      at = end;
    }
  }

  /** One request's part of the script's answer as one count per window it counted, in order. */
  protected abstract countsOf(answer: number[], windows: readonly WindowToCount[]): WindowCount[];
}
