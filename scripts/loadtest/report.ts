import sharp from 'sharp';
import type { Knex } from 'knex';

/** Figures of a finished run: percentiles, the database's view of the generations, the invariants, the chart. */

export interface Percentiles {
  count: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

export function percentiles(values: number[]): Percentiles {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (fraction: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * fraction) - 1)] : 0);
  const round = (value: number) => Math.round(value);
  return { count: sorted.length, p50: round(at(0.5)), p95: round(at(0.95)), p99: round(at(0.99)), max: round(sorted.at(-1) ?? 0) };
}

/** One sample of the run's state, every half second. */
export interface TimelinePoint {
  /** Seconds since the first user started. */
  t: number;
  pending: number;
  processing: number;
  finished: number;
  /** Tasks running at the provider (the simulator's held slots). */
  busySlots: number;
  /** Slots the pool has leased to generations (`provider_slots`): busy slots plus the pool's own overhead. */
  leasedSlots: number;
  streamsOpen: number;
}

export async function sampleGenerations(db: Knex): Promise<{ pending: number; processing: number; finished: number; leasedSlots: number }> {
  const { rows: [row] } = await db.raw<{ rows: { pending: number; processing: number; finished: number; leasedSlots: number }[] }>(
    `select count(*) filter (where status = 'pending') as pending,
            count(*) filter (where status = 'processing') as processing,
            count(*) filter (where status in ('succeeded', 'failed')) as finished,
            (select count(*) from provider_slots where generation_id is not null and lease_expires_at > now()) as "leasedSlots"
     from generations`,
  );
  return row;
}

export interface StoredGeneration {
  id: string;
  status: string;
  error_code: string | null;
  queue_wait_ms: number | null;
  to_terminal_ms: number | null;
  finished_at: Date | null;
  created_at: Date;
}

export function storedGenerations(db: Knex): Promise<StoredGeneration[]> {
  return db('generations').select(
    'id', 'status', 'error_code', 'finished_at', 'created_at',
    db.raw('(extract(epoch from started_at - created_at) * 1000)::float8 as queue_wait_ms'),
    db.raw('(extract(epoch from finished_at - created_at) * 1000)::float8 as to_terminal_ms'),
  );
}

/**
 * Credits conserved: every generation reserved exactly its cost; a failed one got exactly that back
 * as `refund`; a succeeded one got nothing back; and the balances are the sum of the ledger.
 */
export async function creditInvariant(db: Knex) {
  const { rows: [row] } = await db.raw<{ rows: Record<string, number>[] }>(
    `with per_generation as (
       select g.id, g.status, g.cost,
              coalesce(sum(-t.amount) filter (where t.kind = 'reserve'), 0) as reserved,
              coalesce(sum(t.amount) filter (where t.kind = 'refund'), 0) as refunded
       from generations g left join credit_transactions t on t.reference = g.id::text and t.kind in ('reserve', 'refund')
       group by g.id, g.status, g.cost
     )
     select coalesce(sum(reserved), 0)::integer as reserved,
            coalesce(sum(refunded), 0)::integer as refunded,
            coalesce(sum(cost) filter (where status = 'succeeded'), 0)::integer as succeeded_cost,
            count(*) filter (where reserved <> cost)::integer as wrong_reserve,
            count(*) filter (where status = 'failed' and refunded <> cost)::integer as failed_not_refunded,
            count(*) filter (where status = 'succeeded' and refunded <> 0)::integer as succeeded_refunded,
            (select coalesce(sum(balance), 0) from users)::integer as balances,
            (select coalesce(sum(amount), 0) from credit_transactions)::integer as ledger
     from per_generation`,
  );
  const conserved = row.reserved === row.refunded + row.succeeded_cost && row.wrong_reserve === 0
    && row.failed_not_refunded === 0 && row.succeeded_refunded === 0 && row.balances === row.ledger;
  return { conserved, ...row };
}

/** A self-contained HTML page of SVG line charts: throughput, queue depth and streams, provider slots. */
export interface Chart {
  title: string;
  svg: string;
  height: number;
}

/** Throughput, queue depth with open streams, and slot use over the run. */
export function loadTestCharts(timeline: TimelinePoint[], capacity: number): Chart[] {
  const windowS = 3;
  const throughput = timeline.map((point, index) => {
    let from = index;
    while (from > 0 && point.t - timeline[from - 1].t <= windowS) from -= 1;
    const seconds = point.t - timeline[from].t;
    return { t: point.t, value: seconds > 0 ? (point.finished - timeline[from].finished) / seconds : 0 };
  });
  const series = (pick: (point: TimelinePoint) => number) => timeline.map((point) => ({ t: point.t, value: pick(point) }));
  return [
    svgChart(`Throughput (terminal generations per second, ${windowS} s window)`, [{ name: 'throughput', colour: '#1f77b4', points: throughput }]),
    svgChart('Queue depth and open streams', [
      { name: 'pending (waiting for a slot)', colour: '#d62728', points: series((point) => point.pending) },
      { name: 'open streams', colour: '#9467bd', points: series((point) => point.streamsOpen) },
    ]),
    svgChart(`Provider slots (capacity ${capacity})`, [
      { name: 'busy at the provider', colour: '#2ca02c', points: series((point) => point.busySlots) },
      { name: 'leased by the pool', colour: '#ff7f0e', points: series((point) => point.leasedSlots) },
      { name: 'capacity', colour: '#999999', points: series(() => capacity) },
    ]),
  ];
}

export function chartPage(title: string, charts: Chart[], summary: Record<string, string>): string {
  const rows = Object.entries(summary).map(([key, value]) => `<tr><th>${escape(key)}</th><td>${escape(value)}</td></tr>`).join('');
  return `<!doctype html><html><head><meta charset="utf-8"><title>${escape(title)}</title>
<style>body{font:14px system-ui,sans-serif;margin:24px;color:#222}th{text-align:left;padding-right:16px;font-weight:600}svg{display:block;margin:16px 0}</style>
</head><body><h1>${escape(title)}</h1><table>${rows}</table>${charts.map((chart) => `<h2>${escape(chart.title)}</h2>${chart.svg}`).join('')}</body></html>\n`;
}

/** The same charts stacked in one PNG, for a README. */
export function chartPng(charts: Chart[]): Promise<Buffer> {
  let top = 0;
  const parts = charts.map((chart) => {
    const part = `<text x="10" y="${top + 18}" font-size="15" font-family="sans-serif">${escape(chart.title)}</text>`
      + `<g transform="translate(0,${top + 24})">${chart.svg.replace(/^<svg[^>]*>/, '').replace(/<\/svg>$/, '')}</g>`;
    top += chart.height + 34;
    return part;
  });
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="900" height="${top}"><rect width="100%" height="100%" fill="white"/>${parts.join('')}</svg>`;
  return sharp(Buffer.from(svg)).png().toBuffer();
}

interface Series {
  name: string;
  colour: string;
  points: { t: number; value: number }[];
}

function svgChart(title: string, series: Series[]): Chart {
  const width = 900;
  const height = 280;
  const left = 50;
  const bottom = 30;
  const top = 30;
  const all = series.flatMap((line) => line.points);
  const maxT = Math.max(1, ...all.map((point) => point.t));
  const maxValue = Math.max(1, ...all.map((point) => point.value)) * 1.1;
  const x = (t: number) => left + (t / maxT) * (width - left - 10);
  const y = (value: number) => height - bottom - (value / maxValue) * (height - bottom - top);
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((fraction) => {
    const value = maxValue * fraction;
    return `<line x1="${left}" x2="${width - 10}" y1="${y(value)}" y2="${y(value)}" stroke="#eee"/><text x="${left - 6}" y="${y(value) + 4}" text-anchor="end" font-size="11">${value.toFixed(value < 10 ? 1 : 0)}</text>`;
  }).join('');
  const timeTicks = [0, 0.25, 0.5, 0.75, 1].map((fraction) =>
    `<text x="${x(maxT * fraction)}" y="${height - 10}" text-anchor="middle" font-size="11">${(maxT * fraction).toFixed(0)} s</text>`).join('');
  const lines = series.map((line) => `<polyline fill="none" stroke="${line.colour}" stroke-width="2" points="${
    line.points.map((point) => `${x(point.t).toFixed(1)},${y(point.value).toFixed(1)}`).join(' ')}"/>`).join('');
  const legend = series.map((line, index) =>
    `<rect x="${left + 10 + index * 200}" y="8" width="12" height="12" fill="${line.colour}"/><text x="${left + 28 + index * 200}" y="18" font-size="12">${escape(line.name)}</text>`).join('');
  return { title, height, svg: `<svg width="${width}" height="${height}" xmlns="http://www.w3.org/2000/svg">${ticks}${timeTicks}${lines}${legend}</svg>` };
}

function escape(text: string): string {
  return text.replace(/[&<>"]/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[char]!);
}
