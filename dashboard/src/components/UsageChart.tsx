import { useEffect, useId, useRef, useState } from 'preact/hooks';
import type { Schemas } from '../api/client';
import type { Granularity } from './RangePicker';

type Bucket = Schemas['UsageBucketResponse'];

/** Until the chart's box has been measured it is drawn this wide and scaled to fit. */
const DEFAULT_WIDTH = 720;
const HEIGHT = 220;
const NARROW_HEIGHT = 180;
const NARROW = 480;
const BOTTOM = 28;
const TOP = 12;
const RIGHT = 8;
/** The axis labels' font size in CSS pixels (styles.css), and the width of one of their characters. */
const FONT_PX = 12;
const CHAR_PX = 7;
const LABEL_GAP_PX = 14;

const compact = new Intl.NumberFormat(undefined, { notation: 'compact', maximumFractionDigits: 1 });
const whole = new Intl.NumberFormat();

/** Hours in the browser's time; days are UTC days, as the API counts them. */
function bucketLabel(iso: string, granularity: Granularity): string {
  return granularity === 'hour'
    ? new Date(iso).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' })
    : new Date(iso).toLocaleDateString(undefined, { day: 'numeric', month: 'short', timeZone: 'UTC' });
}

/** A round number at or above `n`, for the top of the scale. */
function niceMax(n: number): number {
  if (n <= 4) return 4;
  const magnitude = 10 ** Math.floor(Math.log10(n));
  // Even steps (1 only from 10 up), so the middle line's label is a whole number too.
  for (const step of [1, 2, 4, 6, 8, 10]) if (step * magnitude >= n) return step * magnitude;
  return 10 * magnitude;
}

/**
 * The width of the element in CSS pixels, followed as it changes, so the chart is drawn at the size it
 * is shown: its labels keep their font size on a phone instead of being scaled down with the drawing.
 */
function useBoxWidth() {
  const box = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState<number | null>(null);
  useEffect(() => {
    const element = box.current;
    if (!element) return;
    setWidth(element.clientWidth);
    let frame = 0;
    const observer = new ResizeObserver(() => {
      // Next frame: redrawing inside the observer's callback can resize the box again in the same
      // frame, which the browser reports as an error.
      cancelAnimationFrame(frame);
      frame = requestAnimationFrame(() => setWidth(element.clientWidth));
    });
    observer.observe(element);
    return () => {
      cancelAnimationFrame(frame);
      observer.disconnect();
    };
  }, []);
  return { box, width: width || DEFAULT_WIDTH };
}

/**
 * Requests per bucket (allowed and denied, stacked) or credits spent per bucket as bars, drawn as SVG
 * elements by Preact (DOM, so the Content-Security-Policy has nothing to object to) at the width of its
 * box, named for assistive technology (title and totals) and backed by a table.
 */
export function UsageChart({
  buckets,
  title,
  granularity = 'hour',
  measure = 'requests',
}: {
  buckets: Bucket[];
  title: string;
  granularity?: Granularity;
  measure?: 'requests' | 'credits';
}) {
  const id = useId();
  const { box, width } = useBoxWidth();
  const height = width < NARROW ? NARROW_HEIGHT : HEIGHT;
  const credits = measure === 'credits';
  const heightOf = (bucket: Bucket) => (credits ? bucket.credits_spent : bucket.requests);
  const max = niceMax(Math.max(0, ...buckets.map(heightOf)));
  const ticks = [0, max / 2, max];
  const left = Math.max(...ticks.map((tick) => compact.format(tick).length)) * CHAR_PX + 12;
  const plotWidth = width - left - RIGHT;
  const plotHeight = height - TOP - BOTTOM;
  const slot = plotWidth / Math.max(buckets.length, 1);
  const barWidth = Math.max(1, slot * 0.7);
  const y = (value: number) => TOP + plotHeight - (value / max) * plotHeight;

  const allowed = buckets.reduce((sum, bucket) => sum + bucket.allowed, 0);
  const denied = buckets.reduce((sum, bucket) => sum + bucket.denied, 0);
  const spent = buckets.reduce((sum, bucket) => sum + bucket.credits_spent, 0);
  const summary = credits
    ? `${spent} credits spent.`
    : `${allowed + denied} requests: ${allowed} allowed, ${denied} denied.`;

  // As many time labels as fit side by side, evenly spaced.
  const labelWidth = Math.max(0, ...buckets.map((b) => bucketLabel(b.start, granularity).length)) * CHAR_PX;
  const fitting = Math.max(1, Math.floor(plotWidth / (labelWidth + LABEL_GAP_PX)));
  const labelEvery = Math.ceil(buckets.length / fitting);
  const timeHeader = granularity === 'hour' ? 'Hour starting' : 'Day (UTC)';

  return (
    <figure class="chart">
      <div class="chart-box" ref={box}>
        <svg
          viewBox={`0 0 ${width} ${height}`}
          role="img"
          aria-labelledby={`${id}-title ${id}-desc`}
          preserveAspectRatio="xMidYMid meet"
        >
          <title id={`${id}-title`}>{title}</title>
          <desc id={`${id}-desc`}>{summary}</desc>
          {ticks.map((tick) => (
            <g key={tick}>
              <line class="grid" x1={left} x2={width - RIGHT} y1={y(tick)} y2={y(tick)} />
              <text class="axis" x={left - 6} y={y(tick) + FONT_PX / 3} text-anchor="end">
                {compact.format(tick)}
              </text>
            </g>
          ))}
          {buckets.map((bucket, index) => {
            const x = left + index * slot + (slot - barWidth) / 2;
            const label = bucketLabel(bucket.start, granularity);
            // A bar spans from one count up to another: stacked bars start where the one below ends.
            const bar = (name: string, from: number, to: number) => (
              <rect class={name} x={x} width={barWidth} y={y(to)} height={y(from) - y(to)} />
            );
            return (
              <g key={bucket.start}>
                <title>
                  {credits
                    ? `${label}: ${bucket.credits_spent} credits spent`
                    : `${label}: ${bucket.allowed} allowed, ${bucket.denied} denied`}
                </title>
                {credits ? (
                  bar('bar-credits', 0, bucket.credits_spent)
                ) : (
                  <>
                    {bar('bar-allowed', 0, bucket.allowed)}
                    {bar('bar-denied', bucket.allowed, bucket.allowed + bucket.denied)}
                  </>
                )}
                {index % labelEvery === 0 && (
                  <text class="axis" x={x + barWidth / 2} y={height - 8} text-anchor="middle">
                    {label}
                  </text>
                )}
              </g>
            );
          })}
        </svg>
      </div>
      <figcaption>
        {credits ? (
          <>
            <span class="swatch swatch-credits" aria-hidden="true" /> Credits spent ({whole.format(spent)})
          </>
        ) : (
          <>
            <span class="swatch swatch-allowed" aria-hidden="true" /> Allowed ({whole.format(allowed)})
            <span class="swatch swatch-denied" aria-hidden="true" /> Denied ({whole.format(denied)})
          </>
        )}
      </figcaption>
      <details>
        <summary>Show the numbers as a table</summary>
        <div class="table-wrap" role="region" aria-label={`${title} as a table`} tabIndex={0}>
          <table>
            <caption class="visually-hidden">{title}</caption>
            <thead>
              <tr>
                <th scope="col">{timeHeader}</th>
                {credits ? (
                  <th scope="col">Credits spent</th>
                ) : (
                  <>
                    <th scope="col">Requests</th>
                    <th scope="col">Allowed</th>
                    <th scope="col">Denied</th>
                  </>
                )}
              </tr>
            </thead>
            <tbody>
              {buckets.map((bucket) => (
                <tr key={bucket.start}>
                  <th scope="row">
                    <time dateTime={bucket.start}>{bucketLabel(bucket.start, granularity)}</time>
                  </th>
                  {credits ? (
                    <td>{bucket.credits_spent}</td>
                  ) : (
                    <>
                      <td>{bucket.requests}</td>
                      <td>{bucket.allowed}</td>
                      <td>{bucket.denied}</td>
                    </>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}
