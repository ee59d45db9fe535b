import { useId } from 'preact/hooks';

export type Granularity = 'hour' | 'day';

/** A chart's range: the last `buckets` UTC hours or days, the current one included. */
export interface UsageRange {
  id: string;
  /** Read after "the last": "24 hours", "7 days". */
  label: string;
  granularity: Granularity;
  buckets: number;
}

export const LAST_24_HOURS: UsageRange = { id: '24h', label: '24 hours', granularity: 'hour', buckets: 24 };
export const LAST_7_DAYS: UsageRange = { id: '7d', label: '7 days', granularity: 'day', buckets: 7 };
export const LAST_30_DAYS: UsageRange = { id: '30d', label: '30 days', granularity: 'day', buckets: 30 };
// Usage is kept USAGE_RETENTION_DAYS, 90 by default: a longer range would only add empty days.
export const LAST_90_DAYS: UsageRange = { id: '90d', label: '90 days', granularity: 'day', buckets: 90 };

/** For a key's or an identity's chart: their usage endpoints count days up to 1000 buckets. */
export const CHART_RANGES = [LAST_24_HOURS, LAST_7_DAYS, LAST_30_DAYS, LAST_90_DAYS];

const BUCKET_MS: Record<Granularity, number> = { hour: 3_600_000, day: 86_400_000 };

/**
 * The query of a usage endpoint for the range as of `now`: from the start of its first bucket to now
 * (the server rounds `to` down to the current bucket). Explicit, so two endpoints asked about one
 * range (the organization's buckets and its top keys) answer the same hours.
 */
export function rangeQuery(
  range: UsageRange,
  now = Date.now(),
): { from: string; to: string; granularity: Granularity } {
  const size = BUCKET_MS[range.granularity];
  // Epoch milliseconds count no leap seconds, so UTC hours and days start at multiples of their size.
  const current = Math.floor(now / size) * size;
  return {
    from: new Date(current - (range.buckets - 1) * size).toISOString(),
    to: new Date(now).toISOString(),
    granularity: range.granularity,
  };
}

/** Radio buttons ("Show the last: 24 hours | 7 days | …"), one group per chart. */
export function RangePicker({
  ranges,
  value,
  onChange,
  label = 'Show the last',
}: {
  ranges: UsageRange[];
  value: UsageRange;
  onChange: (range: UsageRange) => void;
  label?: string;
}) {
  const name = useId();
  return (
    <fieldset class="range-picker">
      <legend>{label}</legend>
      <div class="range-options">
        {ranges.map((range) => (
          <label key={range.id} class={range.id === value.id ? 'chosen' : undefined}>
            <input
              type="radio"
              name={name}
              value={range.id}
              checked={range.id === value.id}
              onChange={() => onChange(range)}
            />
            {range.label}
          </label>
        ))}
      </div>
    </fieldset>
  );
}
