import { useState } from 'preact/hooks';
import type { Schemas } from '../api/client';
import { useLoad } from '../api/hooks';
import { Loading, ProblemNote } from './Page';
import { CHART_RANGES, LAST_24_HOURS, rangeQuery, RangePicker, type UsageRange } from './RangePicker';
import { UsageChart } from './UsageChart';

type Usage = { data: Schemas['UsageBucketResponse'][] };

/** What a chart's title says of its range: "Requests per hour in the last 24 hours". */
export const chartTitle = (what: string, range: UsageRange) =>
  `${what} per ${range.granularity} in the last ${range.label}`;

/**
 * A usage section of a key's or an identity's page: its heading, a range picker (the last 24 hours
 * unless the user picks another) and the chart of the buckets `load` answers for that range.
 */
export function UsagePanel({
  headingId,
  load,
  deps,
}: {
  headingId: string;
  load: (query: ReturnType<typeof rangeQuery>) => Promise<Usage>;
  deps: unknown[];
}) {
  const [range, setRange] = useState<UsageRange>(LAST_24_HOURS);
  // The answer keeps the range it was asked for: while another range loads, the chart still describes
  // what it shows.
  const usage = useLoad(
    async () => ({ range, buckets: (await load(rangeQuery(range))).data }),
    [range.id, ...deps],
  );
  return (
    <section aria-labelledby={headingId} aria-busy={usage.loading}>
      <div class="section-head">
        <h2 id={headingId}>Usage</h2>
        <RangePicker ranges={CHART_RANGES} value={range} onChange={setRange} />
      </div>
      {usage.loading && !usage.data && <Loading />}
      <ProblemNote problem={usage.problem} />
      {usage.data && (
        <UsageChart
          buckets={usage.data.buckets}
          granularity={usage.data.range.granularity}
          title={chartTitle('Requests', usage.data.range)}
        />
      )}
    </section>
  );
}
