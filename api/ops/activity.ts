import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import { html, type Html } from '../../media/pages/html';
import { readQueueSizes, type QueueSize } from '../../db/queue-sizes';
import { consolePage, seconds, table } from './view';

/**
 * Queues and generations over time: the queue sizes now (`db/queue-sizes.ts`), the generations waiting and
 * processing now, and per hour of the last 24 the generations created, succeeded and failed (by
 * `created_at` and `finished_at`, each read through an index).
 */
export interface HourCounts {
  hour: Date;
  created: number;
  succeeded: number;
  failed: number;
}

export interface Activity {
  queues: QueueSize[];
  pending: number;
  processing: number;
  hours: HourCounts[];
}

const activityHours = 24;

export async function readActivity(db: Knex, boss: PgBoss): Promise<Activity> {
  const { rows: hours } = await db.raw<{ rows: HourCounts[] }>(
    `with hours as (
       select generate_series(date_trunc('hour', now()) - (:hours - 1) * interval '1 hour', date_trunc('hour', now()), interval '1 hour') as hour
     ), created as (
       select date_trunc('hour', created_at) as hour, count(*)::int as count
       from generations where created_at >= date_trunc('hour', now()) - (:hours - 1) * interval '1 hour'
       group by 1
     ), finished as (
       select date_trunc('hour', finished_at) as hour,
         count(*) filter (where status = 'succeeded')::int as succeeded,
         count(*) filter (where status = 'failed')::int as failed
       from generations where finished_at >= date_trunc('hour', now()) - (:hours - 1) * interval '1 hour'
       group by 1
     )
     select hours.hour, coalesce(created.count, 0) as created, coalesce(finished.succeeded, 0) as succeeded, coalesce(finished.failed, 0) as failed
     from hours left join created using (hour) left join finished using (hour)
     order by hours.hour`,
    { hours: activityHours },
  );
  const { rows: [now] } = await db.raw<{ rows: { pending: number; processing: number }[] }>(
    `select (select count(*) from generations where status = 'pending')::int as pending,
       (select count(*) from generations where status = 'processing')::int as processing`,
  );
  return { queues: await readQueueSizes(db, boss), pending: now.pending, processing: now.processing, hours };
}

/** Bars per hour, side by side: created, succeeded, failed; scaled to the busiest hour. */
function hourChart(hours: HourCounts[]): Html {
  const width = 720;
  const height = 160;
  const base = height - 16;
  const slot = width / hours.length;
  const bar = (slot - 4) / 3;
  const top = Math.max(1, ...hours.flatMap((hour) => [hour.created, hour.succeeded, hour.failed]));
  const kinds = ['created', 'succeeded', 'failed'] as const;
  const bars = hours.flatMap((hour, index) => kinds.map((kind, offset) => {
    const value = hour[kind];
    const barHeight = value ? Math.max(1, (value / top) * (base - 12)) : 0;
    const x = index * slot + 2 + offset * bar;
    return html`<rect class="${kind}" x="${x.toFixed(1)}" y="${(base - barHeight).toFixed(1)}" width="${bar.toFixed(1)}" height="${barHeight.toFixed(1)}"><title>${hour.hour.toISOString().slice(11, 16)} UTC: ${value} ${kind}</title></rect>`;
  }));
  const labels = hours.map((hour, index) => (index % 3 === 0
    ? html`<text x="${(index * slot + slot / 2).toFixed(1)}" y="${height - 2}" text-anchor="middle">${hour.hour.toISOString().slice(11, 13)}h</text>`
    : ''));
  return html`<svg class="chart" viewBox="0 0 ${width} ${height}" preserveAspectRatio="none" role="img" aria-label="Generations per hour, last ${hours.length} hours (UTC)">
<line class="axis" x1="0" y1="${base}" x2="${width}" y2="${base}"/>
<text x="2" y="10">${top}</text>
${bars}${labels}</svg>
<p class="legend"><span class="created">■ created</span><span class="succeeded">■ succeeded</span><span class="failed">■ failed</span></p>`;
}

export function activityPage(activity: Activity): string {
  const queueRows = activity.queues.map((queue) => html`<tr data-queue="${queue.queue}">
<td class="mono">${queue.queue}</td><td class="number waiting">${queue.waiting}</td><td class="number deferred">${queue.deferred}</td><td class="number">${queue.waiting ? seconds(queue.oldest_age_s) : '—'}</td>
</tr>`);
  const hourRows = [...activity.hours].reverse().map((hour) => html`<tr data-hour="${hour.hour.toISOString()}">
<td>${hour.hour.toISOString().slice(0, 13).replace('T', ' ')}:00 UTC</td><td class="number created">${hour.created}</td><td class="number succeeded">${hour.succeeded}</td><td class="number failed">${hour.failed}</td>
</tr>`);
  const total = (kind: 'created' | 'succeeded' | 'failed') => activity.hours.reduce((sum, hour) => sum + hour[kind], 0);
  return consolePage('/ops/activity', 'Queues and generations', html`<div class="figures">
<div class="figure"><strong id="generations-pending">${activity.pending}</strong>generations waiting for a slot</div>
<div class="figure"><strong id="generations-processing">${activity.processing}</strong>generations processing</div>
<div class="figure"><strong>${total('created')}</strong>created in ${activity.hours.length} h</div>
<div class="figure${total('failed') ? ' bad' : ''}"><strong>${total('failed')}</strong>failed in ${activity.hours.length} h</div>
</div>
<h2>Job queues (pg-boss)</h2>
${table(html`<tr><th>queue</th><th class="number">waiting</th><th class="number">deferred</th><th class="number">oldest waiting</th></tr>`, queueRows, 'No queue.')}
<p class="hint">Every job, its payload and its retries: <a href="/ops/queues">the pg-boss dashboard</a>.</p>
<h2>Generations per hour</h2>
${hourChart(activity.hours)}
${table(html`<tr><th>hour</th><th class="number">created</th><th class="number">succeeded</th><th class="number">failed</th></tr>`, hourRows, 'No hour.')}`);
}
