import { isISO8601 } from 'class-validator';
import { CommonError, CommonErrorCode } from '../common/common.errors';

export const GRANULARITIES = ['hour', 'day'] as const;
export type Granularity = (typeof GRANULARITIES)[number];

export const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;
const BUCKET_MS: Readonly<Record<Granularity, number>> = { hour: HOUR_MS, day: DAY_MS };

/** The contract's default window: the 24 buckets that end with the current one. */
export const DEFAULT_BUCKETS = 24;
export const MAX_BUCKETS = 1000;

/** Epoch milliseconds are UTC and count no leap seconds, so a UTC hour or day starts at a multiple. */
export function bucketStart(ms: number, granularity: Granularity): number {
  const size = BUCKET_MS[granularity];
  return Math.floor(ms / size) * size;
}

/** The buckets a usage query covers, both ends inclusive (`to` is the start of the last bucket). */
export class BucketRange {
  private constructor(
    readonly granularity: Granularity,
    readonly from: number,
    readonly to: number,
  ) {}

  get size(): number {
    return BUCKET_MS[this.granularity];
  }

  /** Where the range ends, exclusive: after the last bucket. */
  get end(): number {
    return this.to + this.size;
  }

  get count(): number {
    return (this.to - this.from) / this.size + 1;
  }

  /** The start of every bucket, oldest first. */
  starts(): number[] {
    return Array.from({ length: this.count }, (_, i) => this.from + i * this.size);
  }

  /**
   * Rounds both ends down to their bucket; a missing end is filled from the other one (or from now)
   * so that the default is the 24 buckets ending with the current one. Refuses a reversed range and
   * one of more than MAX_BUCKETS buckets, as the validation problem every input error is.
   */
  static resolve(input: { from?: number; to?: number; granularity?: Granularity }, now: number): BucketRange {
    const granularity = input.granularity ?? 'hour';
    const size = BUCKET_MS[granularity];
    const from = input.from === undefined ? undefined : bucketStart(input.from, granularity);
    const to = bucketStart(input.to ?? now, granularity);
    const start = from ?? to - (DEFAULT_BUCKETS - 1) * size;
    if (start > to) {
      throw invalidRange('from', 'from must not be after to');
    }
    const count = (to - start) / size + 1;
    if (count > MAX_BUCKETS) {
      throw invalidRange(
        'from',
        `the range from ${new Date(start).toISOString()} to ${new Date(to).toISOString()} covers ${count} ${granularity} buckets; at most ${MAX_BUCKETS} are allowed`,
      );
    }
    return new BucketRange(granularity, start, to);
  }
}

function invalidRange(field: string, message: string): CommonError {
  return new CommonError(CommonErrorCode.ValidationFailed, message, { errors: [{ field, message }] });
}

// ISO 8601 in the extended form Date.parse reads the same everywhere: a date, or a date and time
// with an optional offset. (Week and ordinal dates are ISO 8601 too, but no client sends them.)
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})?)?$/;
const LAST_STORABLE_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/**
 * Epoch milliseconds of an ISO 8601 timestamp, or undefined when it is not one. A time without an
 * offset is UTC: Date.parse would read it in the server's own zone.
 */
export function parseTimestamp(value: string): number | undefined {
  const match = TIMESTAMP.exec(value);
  // isISO8601's strict mode refuses dates that do not exist (2025-02-30), which Date.parse rolls over.
  if (!match || !isISO8601(value, { strict: true, strictSeparator: true })) return undefined;
  const hasTime = match[1] !== undefined;
  const ms = Date.parse(hasTime && match[4] === undefined ? `${value}Z` : value);
  if (Number.isNaN(ms) || ms < 0 || ms > LAST_STORABLE_MS) return undefined;
  return ms;
}
