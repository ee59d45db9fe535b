/**
 * Redis scripts whose callers already send a turn's work in one call each: the rate-limit window
 * storages count a turn's requests of one key in one script run (rate-limits/redis-window-storage.ts).
 * RedisConnection leaves them out of ioredis's auto-pipelining, which would wrap every such call in a
 * pipeline of its own and gain nothing by it: without it, counting windows in Redis took about a third
 * less of this process's CPU a request (docs/architecture.md, "Speed-ups, and what each buys").
 */
export const SELF_BATCHED_SCRIPTS = {
  fixedWindows: 'gatehouseIncrementWindows',
  slidingWindows: 'gatehouseSlideWindows',
} as const;
