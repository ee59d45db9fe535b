import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { api, call, type Schemas } from '../api/client';
import { useLoad } from '../api/hooks';
import { Loading, Page, ProblemNote } from '../components/Page';
import {
  LAST_24_HOURS,
  LAST_30_DAYS,
  LAST_7_DAYS,
  rangeQuery,
  RangePicker,
  type UsageRange,
} from '../components/RangePicker';
import { Table } from '../components/Table';
import { chartTitle } from '../components/UsagePanel';
import { UsageChart } from '../components/UsageChart';
import { useCan } from '../permissions';
import { Link } from '../router';

type KeyTotal = Schemas['KeyUsageTotalResponse'];
type IdentityTotal = Schemas['IdentityUsageTotalResponse'];

/**
 * Its top keys and identities come from GET /v1/usage, which counts hours, at most 1000 (41 days): the
 * page offers ranges that both it and the buckets can answer.
 */
const USAGE_RANGES = [LAST_24_HOURS, LAST_7_DAYS, LAST_30_DAYS];
/** How many keys and identities the page lists, busiest first. */
const TOP = 10;

const whole = new Intl.NumberFormat();

export function Usage() {
  const can = useCan();
  const byIdentity = can('identities:read');
  const [range, setRange] = useState<UsageRange>(LAST_30_DAYS);

  // One range for all three reads, so the totals, the top keys and the top identities add up.
  const usage = useLoad(async () => {
    const query = rangeQuery(range);
    const span = { from: query.from, to: query.to };
    const [series, keys, identities] = await Promise.all([
      call(api.GET('/v1/usage/series', { params: { query } })),
      call(api.GET('/v1/usage', { params: { query: span } })),
      byIdentity
        ? call(api.GET('/v1/usage', { params: { query: { ...span, group_by: 'identity' } } }))
        : Promise.resolve(null),
    ]);
    return {
      range,
      series: series.data,
      // The route answers keys by default and identities for group_by=identity.
      keys: keys.data as KeyTotal[],
      identities: identities ? (identities.data as IdentityTotal[]) : null,
    };
  }, [range.id, byIdentity]);

  const data = usage.data;
  const sum = (field: 'requests' | 'allowed' | 'denied' | 'credits_spent') =>
    data ? data.series.reduce((total, bucket) => total + bucket[field], 0) : 0;

  return (
    <Page title="Usage">
      <p class="lead">
        Every request made with your organization's keys, allowed or refused, and the credits they spent, by
        UTC day (or by hour over the last 24 hours). Counts arrive within seconds.
      </p>
      <RangePicker ranges={USAGE_RANGES} value={range} onChange={setRange} />
      <div aria-busy={usage.loading}>
        {usage.loading && !data && <Loading />}
        <ProblemNote problem={usage.problem} />
        {data && (
          <>
            <section aria-labelledby="usage-totals">
              <h2 id="usage-totals">In the last {data.range.label}</h2>
              <dl class="stats">
                <Stat term="Requests" value={sum('requests')} />
                <Stat term="Allowed" value={sum('allowed')} />
                <Stat term="Denied" value={sum('denied')} />
                <Stat term="Credits spent" value={sum('credits_spent')} />
              </dl>
            </section>
            <section aria-labelledby="usage-requests">
              <h2 id="usage-requests">Requests and denials</h2>
              <UsageChart
                buckets={data.series}
                granularity={data.range.granularity}
                title={chartTitle('Requests', data.range)}
              />
            </section>
            <section aria-labelledby="usage-credits">
              <h2 id="usage-credits">Credits spent</h2>
              <UsageChart
                buckets={data.series}
                granularity={data.range.granularity}
                measure="credits"
                title={chartTitle('Credits spent', data.range)}
              />
            </section>
            <TopList
              of="keys"
              rangeLabel={data.range.label}
              rows={data.keys}
              rowKey={(row) => row.key_id}
              name={{
                header: 'Key',
                cell: (row) => <Link href={`/api-keys/${row.key_id}`}>{row.name}</Link>,
              }}
              empty="No key was used in this range."
            />
            {data.identities && (
              <TopList
                of="identities"
                rangeLabel={data.range.label}
                rows={data.identities}
                rowKey={(row) => row.identity_id}
                name={{
                  header: 'Identity',
                  cell: (row) => <Link href={`/identities/${row.identity_id}`}>{row.external_id}</Link>,
                }}
                empty="No identity's keys were used in this range."
              />
            )}
          </>
        )}
      </div>
    </Page>
  );
}

function Stat({ term, value }: { term: string; value: number }) {
  return (
    <div>
      <dt>{term}</dt>
      <dd>{whole.format(value)}</dd>
    </div>
  );
}

interface Totals {
  requests: number;
  allowed: number;
  denied: number;
  credits_spent: number;
}

/** The busiest keys or identities of the range, in their own section. */
function TopList<T extends Totals>({
  of,
  rangeLabel,
  rows,
  rowKey,
  name,
  empty,
}: {
  of: 'keys' | 'identities';
  rangeLabel: string;
  rows: T[];
  rowKey: (row: T) => string;
  name: { header: string; cell: (row: T) => ComponentChildren };
  empty: string;
}) {
  const rest = rows.length - TOP;
  const headingId = `usage-top-${of}`;
  return (
    <section aria-labelledby={headingId}>
      <h2 id={headingId}>{`Top ${of}`}</h2>
      <Table
        caption={`${of === 'keys' ? 'Keys' : 'Identities'} with the most requests in the last ${rangeLabel}`}
        rows={rows.slice(0, TOP)}
        rowKey={rowKey}
        empty={empty}
        columns={[
          { header: name.header, rowHeader: true, cell: name.cell },
          { header: 'Requests', cell: (row) => row.requests },
          { header: 'Allowed', fold: true, cell: (row) => row.allowed },
          { header: 'Denied', fold: true, cell: (row) => row.denied },
          { header: 'Credits spent', fold: true, cell: (row) => row.credits_spent },
        ]}
      />
      {rest > 0 && (
        <p class="hint">
          And {rest} more {of} with fewer requests.
        </p>
      )}
    </section>
  );
}
