import type { Attempt } from './api.js';
import { formatTime, h, svg } from './dom.js';

// Successes and failures over time, as stacked bars in inline SVG. The time span of the attempts
// shown is cut into equal buckets, the newest at the right edge; a span shorter than a minute is
// drawn as a minute, so a few attempts close together make one bar at the right, not a smear.

const BUCKETS = 24;
const MIN_SPAN_MS = 60_000;
const WIDTH = 640;
const HEIGHT = 170;
const PLOT = { left: 34, right: 6, top: 10, bottom: 26 };

interface Bucket {
  start: number;
  succeeded: number;
  failed: number;
}

/** `retrying`, `failed` and `gone` are all attempts that did not get a 2xx. */
const succeeded = (attempt: Attempt) => attempt.outcome === 'succeeded';

function buckets(attempts: Attempt[]): { buckets: Bucket[]; width: number } {
  const times = attempts.map((a) => Date.parse(a.attemptedAt));
  const newest = Math.max(...times);
  const oldest = Math.min(...times);
  const width = Math.ceil(Math.max(newest - oldest + 1, MIN_SPAN_MS) / BUCKETS);
  const start = newest + 1 - width * BUCKETS;
  const result = Array.from({ length: BUCKETS }, (_, i) => ({ start: start + i * width, succeeded: 0, failed: 0 }));
  attempts.forEach((attempt, i) => {
    const bucket = result[Math.min(BUCKETS - 1, Math.floor((times[i]! - start) / width))]!;
    if (succeeded(attempt)) bucket.succeeded++;
    else bucket.failed++;
  });
  return { buckets: result, width };
}

export function deliveryChart(attempts: Attempt[]): HTMLElement {
  if (attempts.length === 0) return h('p', { class: 'empty' }, 'No delivery attempts yet. They appear here as events are delivered.');
  const { buckets: bars, width } = buckets(attempts);
  const ok = attempts.filter(succeeded).length;
  const failed = attempts.length - ok;
  const top = Math.max(...bars.map((b) => b.succeeded + b.failed));
  const plotWidth = WIDTH - PLOT.left - PLOT.right;
  const plotHeight = HEIGHT - PLOT.top - PLOT.bottom;
  const barWidth = plotWidth / BUCKETS;
  const y = (count: number) => PLOT.top + plotHeight - (count / top) * plotHeight;
  const from = formatTime(bars[0]!.start);
  const to = formatTime(bars[BUCKETS - 1]!.start + width - 1);

  const rects = bars.flatMap((bar, i) => {
    if (bar.succeeded + bar.failed === 0) return [];
    const x = PLOT.left + i * barWidth + 1;
    const label = `${formatTime(bar.start)}: ${bar.succeeded} succeeded, ${bar.failed} failed`;
    return [
      svg('rect', { class: 'bar-ok', x, y: y(bar.succeeded), width: barWidth - 2, height: y(0) - y(bar.succeeded) }),
      svg('rect', { class: 'bar-failed', x, y: y(bar.succeeded + bar.failed), width: barWidth - 2, height: y(bar.succeeded) - y(bar.succeeded + bar.failed) }),
      // A transparent column over both, so the whole bar shows its tooltip.
      svg('rect', { class: 'bar-hit', x, y: PLOT.top, width: barWidth - 2, height: plotHeight }, svg('title', {}, label)),
    ];
  });

  const chart = svg(
    'svg',
    { class: 'chart', viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: 'img', 'aria-labelledby': 'chart-title', 'aria-describedby': 'chart-desc' },
    svg('title', { id: 'chart-title' }, 'Delivery attempts over time'),
    svg('desc', { id: 'chart-desc' }, `${ok} succeeded and ${failed} failed, from ${from} to ${to}.`),
    svg('line', { class: 'axis', x1: PLOT.left, x2: WIDTH - PLOT.right, y1: y(0), y2: y(0) }),
    svg('line', { class: 'grid', x1: PLOT.left, x2: WIDTH - PLOT.right, y1: y(top), y2: y(top) }),
    svg('text', { class: 'tick', x: PLOT.left - 6, y: y(top) + 4, 'text-anchor': 'end' }, top),
    svg('text', { class: 'tick', x: PLOT.left - 6, y: y(0) + 4, 'text-anchor': 'end' }, 0),
    svg('text', { class: 'tick', x: PLOT.left, y: HEIGHT - 6, 'text-anchor': 'start' }, from),
    svg('text', { class: 'tick', x: WIDTH - PLOT.right, y: HEIGHT - 6, 'text-anchor': 'end' }, to),
    ...rects,
  );
  const legend = h(
    'p',
    { class: 'legend' },
    h('span', { class: 'swatch swatch-ok', 'aria-hidden': 'true' }),
    `${ok} succeeded`,
    h('span', { class: 'swatch swatch-failed', 'aria-hidden': 'true' }),
    `${failed} failed (no 2xx answer)`,
  );
  return h('figure', { class: 'chart-figure' }, chart, legend);
}
