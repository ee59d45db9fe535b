import { Logger } from '@nestjs/common';
import { MAX_REFUSALS, MAX_RETRY_DELAY_MS, WriteBacklog } from './write-backlog';

/** What pg says when the server is not there. */
const unreachable = () =>
  Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

/**
 * A buffer of numbers written to `table` in one batch, failing while `down` (unreachable) or while
 * `refusing` (the server answers with an error: a NUL it cannot store).
 */
class Buffer {
  items: number[] = [];
  table: number[] = [];
  down = false;
  refusing = false;
  writes = 0;
  readonly logger = new Logger('test');
  readonly backlog = new WriteBacklog({
    what: 'items',
    droppedWhat: 'items',
    capacity: 3,
    delayMs: 100,
    logger: this.logger,
    waiting: () => this.items.length,
    write: () => this.write(),
    discardOldest: () => this.items.splice(0).length,
  });

  add(item: number): void {
    if (!this.backlog.admit(1)) return;
    this.items.push(item);
    this.backlog.schedule();
  }

  private async write(): Promise<void> {
    this.writes += 1;
    await Promise.resolve();
    if (this.down) throw unreachable();
    if (this.refusing)
      throw Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00'), { code: '22021' });
    this.table.push(...this.items.splice(0));
    this.backlog.progressed();
  }
}

describe('WriteBacklog', () => {
  let buffer: Buffer;
  let warnings: jest.SpyInstance;
  let errors: jest.SpyInstance;

  beforeEach(() => {
    jest.useFakeTimers();
    buffer = new Buffer();
    warnings = jest.spyOn(buffer.logger, 'warn').mockImplementation(() => undefined);
    errors = jest.spyOn(buffer.logger, 'error').mockImplementation(() => undefined);
    jest.spyOn(buffer.logger, 'log').mockImplementation(() => undefined);
  });
  afterEach(() => {
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  it('writes what was added after its delay', async () => {
    buffer.add(1);
    buffer.add(2);
    await jest.advanceTimersByTimeAsync(99);
    expect(buffer.table).toEqual([]);
    await jest.advanceTimersByTimeAsync(1);
    expect(buffer.table).toEqual([1, 2]);
    expect(buffer.writes).toBe(1);
  });

  it('keeps what failed and retries with a backoff that doubles up to its maximum, then writes it in order', async () => {
    buffer.down = true;
    buffer.add(1);
    await jest.advanceTimersByTimeAsync(100);
    expect(buffer.writes).toBe(1);
    // Retries after 250, 500, 1000, 2000, 4000, then every MAX_RETRY_DELAY_MS.
    const retryTimes: number[] = [];
    let last = buffer.writes;
    for (let elapsed = 0; elapsed < 4 * MAX_RETRY_DELAY_MS + 7750; elapsed += 50) {
      await jest.advanceTimersByTimeAsync(50);
      if (buffer.writes !== last) {
        retryTimes.push(elapsed + 50);
        last = buffer.writes;
      }
    }
    const gaps = retryTimes.map((at, i) => at - (retryTimes[i - 1] ?? 0));
    expect(gaps.slice(0, 7)).toEqual([250, 500, 1000, 2000, 4000, MAX_RETRY_DELAY_MS, MAX_RETRY_DELAY_MS]);
    // Added meanwhile: it waits for the retry instead of starting writes of its own.
    buffer.add(2);
    expect(buffer.backlog.waiting).toBe(2);
    expect(warnings).toHaveBeenCalledTimes(1);
    expect(warnings).toHaveBeenCalledWith(
      expect.stringMatching(/^could not write items: keeping 1 and retrying/),
    );

    buffer.down = false;
    await jest.advanceTimersByTimeAsync(MAX_RETRY_DELAY_MS);
    expect(buffer.table).toEqual([1, 2]);
    expect(buffer.backlog.waiting).toBe(0);
  });

  it('holds at most its capacity: the rest is dropped, counted and logged', async () => {
    buffer.down = true;
    for (let i = 1; i <= 5; i++) buffer.add(i);
    expect(buffer.backlog.waiting).toBe(3);
    expect(buffer.backlog.dropped).toBe(2);
    expect(warnings).toHaveBeenCalledWith(
      '3 items already wait to be written: dropping new ones until the database takes them',
    );

    buffer.down = false;
    await buffer.backlog.flush();
    expect(buffer.table).toEqual([1, 2, 3]);
    expect(warnings).toHaveBeenLastCalledWith('dropped 2 items: 3 items were already waiting to be written');
    // Room again; `dropped` only grows (it is exported as a counter).
    buffer.add(6);
    await buffer.backlog.flush();
    expect(buffer.table).toEqual([1, 2, 3, 6]);
    expect(buffer.backlog.dropped).toBe(2);
  });

  it('drops a batch the database keeps refusing although it answers, after MAX_REFUSALS tries, and goes on', async () => {
    buffer.refusing = true;
    buffer.add(1);
    for (let i = 1; i < MAX_REFUSALS; i++) await buffer.backlog.flush();
    expect(buffer.backlog.waiting).toBe(1);
    await buffer.backlog.flush();
    expect(buffer.backlog.waiting).toBe(0);
    expect(buffer.backlog.dropped).toBe(1);
    expect(errors).toHaveBeenCalledWith(
      `dropped 1 items: the database refused them ${MAX_REFUSALS} times: invalid byte sequence for encoding "UTF8": 0x00`,
    );

    buffer.refusing = false;
    buffer.add(2);
    await buffer.backlog.flush();
    expect(buffer.table).toEqual([2]);
  });

  it('never drops for unavailability, however long it lasts', async () => {
    buffer.down = true;
    buffer.add(1);
    for (let i = 0; i < 3 * MAX_REFUSALS; i++) await buffer.backlog.flush();
    expect(buffer.backlog.waiting).toBe(1);
    expect(buffer.backlog.dropped).toBe(0);
  });

  it('writes in a flush what was added while a write ran, after it', async () => {
    buffer.add(1);
    const first = buffer.backlog.flush();
    buffer.add(2);
    const second = buffer.backlog.flush();
    await Promise.all([first, second]);
    expect(buffer.table).toEqual([1, 2]);
  });

  it('at shutdown, retries until its deadline, then logs what could not be written as a count', async () => {
    buffer.down = true;
    buffer.add(1);
    buffer.add(2);
    const closed = buffer.backlog.close(2_000);
    await jest.advanceTimersByTimeAsync(2_000);
    expect(await closed).toBe(2);
    expect(buffer.writes).toBeGreaterThan(2);
    expect(errors).toHaveBeenCalledWith('2 items could not be written before shutdown');
    // Closed: nothing is retried after it.
    const writes = buffer.writes;
    await jest.advanceTimersByTimeAsync(5 * MAX_RETRY_DELAY_MS);
    expect(buffer.writes).toBe(writes);
  });

  it('at shutdown, writes what waits when the database takes it', async () => {
    buffer.add(1);
    expect(await buffer.backlog.close(2_000)).toBe(0);
    expect(buffer.table).toEqual([1]);
    expect(errors).not.toHaveBeenCalled();
  });
});
