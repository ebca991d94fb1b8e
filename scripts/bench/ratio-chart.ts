// benchmarks.svg: a bar for each throughput ratio (to bare Fastify, or of a grown case to its
// small one), its target dashed. A refused ratio gets no bar, only the word.
import type { RatioBar } from './targets.js';

const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function ratioChart(bars: RatioBar[]): string {
  const width = 760;
  const barHeight = 22;
  const gap = 10;
  const left = 330;
  const scale = (width - left - 60) / 1.2;
  const height = 40 + bars.length * (barHeight + gap);
  const rows = bars
    .map((bar, i) => {
      const y = 30 + i * (barHeight + gap);
      const label = `<text x="${left - 8}" y="${y + 16}" text-anchor="end" font-size="12">${escape(bar.label)}</text>`;
      const target = `<line x1="${left + bar.target * scale}" x2="${left + bar.target * scale}" y1="${y - 3}" y2="${y + barHeight + 3}" stroke="#000" stroke-dasharray="4 2"/>`;
      if (bar.ratio === undefined) {
        return `${label}<text x="${left + 6}" y="${y + 16}" font-size="12" fill="#666">refused: baseline throttled</text>${target}`;
      }
      const w = Math.max(1, Math.min(1.2, bar.ratio) * scale);
      const colour = bar.verdict === 'yes' ? '#2e7d32' : bar.verdict === 'no' ? '#c62828' : '#757575';
      return (
        label +
        `<rect x="${left}" y="${y}" width="${w.toFixed(1)}" height="${barHeight}" fill="${colour}"/>` +
        `<text x="${left + w + 6}" y="${y + 16}" font-size="12">${bar.shown}</text>` +
        target
      );
    })
    .join('\n');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif">
<text x="${left}" y="18" font-size="12">Throughput ratio (to bare Fastify, or grown / small case); dashed: target</text>
<line x1="${left + scale}" x2="${left + scale}" y1="24" y2="${height - 8}" stroke="#999"/>
${rows}
</svg>
`;
}
