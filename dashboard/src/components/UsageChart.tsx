import { useId } from 'preact/hooks';
import type { Schemas } from '../api/client';

type Bucket = Schemas['UsageBucketResponse'];

const WIDTH = 720;
const HEIGHT = 220;
const LEFT = 48;
const BOTTOM = 28;
const TOP = 12;

const hourOf = (iso: string) =>
  new Date(iso).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });

/** A round number at or above `n`, for the top of the scale. */
function niceMax(n: number): number {
  if (n <= 5) return 5;
  const magnitude = 10 ** Math.floor(Math.log10(n));
  for (const step of [1, 2, 5, 10]) if (step * magnitude >= n) return step * magnitude;
  return 10 * magnitude;
}

/**
 * Allowed and denied requests per bucket as stacked bars, drawn as SVG elements by Preact (DOM, so the
 * Content-Security-Policy has nothing to object to), named for assistive technology and backed by a table.
 */
export function UsageChart({ buckets, title }: { buckets: Bucket[]; title: string }) {
  const id = useId();
  const max = niceMax(Math.max(0, ...buckets.map((bucket) => bucket.requests)));
  const plotWidth = WIDTH - LEFT - 8;
  const plotHeight = HEIGHT - TOP - BOTTOM;
  const slot = plotWidth / Math.max(buckets.length, 1);
  const barWidth = Math.max(2, slot * 0.7);
  const y = (value: number) => TOP + plotHeight - (value / max) * plotHeight;
  const allowed = buckets.reduce((sum, bucket) => sum + bucket.allowed, 0);
  const denied = buckets.reduce((sum, bucket) => sum + bucket.denied, 0);
  const labelEvery = Math.ceil(buckets.length / 8);

  return (
    <figure class="chart">
      <svg
        viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
        role="img"
        aria-labelledby={`${id}-title ${id}-desc`}
        preserveAspectRatio="xMidYMid meet"
      >
        <title id={`${id}-title`}>{title}</title>
        <desc id={`${id}-desc`}>{`${allowed + denied} requests: ${allowed} allowed, ${denied} denied.`}</desc>
        {[0, max / 2, max].map((tick) => (
          <g key={tick}>
            <line class="grid" x1={LEFT} x2={WIDTH - 8} y1={y(tick)} y2={y(tick)} />
            <text class="axis" x={LEFT - 6} y={y(tick) + 4} text-anchor="end">
              {tick}
            </text>
          </g>
        ))}
        {buckets.map((bucket, index) => {
          const x = LEFT + index * slot + (slot - barWidth) / 2;
          return (
            <g key={bucket.start}>
              <title>{`${hourOf(bucket.start)}: ${bucket.allowed} allowed, ${bucket.denied} denied`}</title>
              <rect
                class="bar-allowed"
                x={x}
                width={barWidth}
                y={y(bucket.allowed)}
                height={y(0) - y(bucket.allowed)}
              />
              <rect
                class="bar-denied"
                x={x}
                width={barWidth}
                y={y(bucket.allowed + bucket.denied)}
                height={y(bucket.allowed) - y(bucket.allowed + bucket.denied)}
              />
              {index % labelEvery === 0 && (
                <text class="axis" x={x + barWidth / 2} y={HEIGHT - 8} text-anchor="middle">
                  {hourOf(bucket.start)}
                </text>
              )}
            </g>
          );
        })}
      </svg>
      <figcaption>
        <span class="swatch swatch-allowed" aria-hidden="true" /> Allowed ({allowed})
        <span class="swatch swatch-denied" aria-hidden="true" /> Denied ({denied})
      </figcaption>
      <details>
        <summary>Show the numbers as a table</summary>
        <div class="table-wrap" role="region" aria-label={`${title} as a table`} tabIndex={0}>
          <table>
            <caption class="visually-hidden">{title}</caption>
            <thead>
              <tr>
                <th scope="col">Hour starting</th>
                <th scope="col">Allowed</th>
                <th scope="col">Denied</th>
              </tr>
            </thead>
            <tbody>
              {buckets.map((bucket) => (
                <tr key={bucket.start}>
                  <th scope="row">
                    <time dateTime={bucket.start}>{hourOf(bucket.start)}</time>
                  </th>
                  <td>{bucket.allowed}</td>
                  <td>{bucket.denied}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}
