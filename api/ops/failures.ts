import type { Knex } from 'knex';
import type { Config } from '../../config';
import { html } from '../../media/pages/html';
import type { ReplayOutcome } from '../../services/generations/replay-failed';
import { consolePage, formTokenField, relativeTime, table, utcTime } from './view';

/**
 * Failed generations of the last day by error code, the latest ones with a replay action each and
 * one per code. A replay is `replayFailed` (api/generations/replay-failed.ts), the code path of
 * `npm run replay-failed -- --apply`: a new attempt at today's price, at most once per failure.
 */
export const failureWindowS = 24 * 3600;
const listed = 50;

/** A failure still waiting for a replay: not replayed yet, and not a cancellation by its owner. */
export const awaitingReplay = "replayed_as is null and error_code <> 'canceled'";

export interface FailureCount {
  error_code: string;
  count: number;
  not_replayed: number;
  last_at: Date;
}

export interface FailedGeneration {
  id: string;
  user_id: string;
  error_code: string;
  kind: string;
  effect_slug: string | null;
  finished_at: Date;
  replayed_as: string | null;
}

export interface Failures {
  byCode: FailureCount[];
  latest: FailedGeneration[];
  /** The error code the list is filtered by, if any. */
  code: string | null;
}

export async function readFailures(db: Knex, code: string | null): Promise<Failures> {
  const { rows: byCode } = await db.raw<{ rows: FailureCount[] }>(
    `select error_code, count(*)::int as count, count(*) filter (where ${awaitingReplay})::int as not_replayed,
       max(finished_at) as last_at
     from generations where status = 'failed' and finished_at > now() - :window * interval '1 second'
     group by error_code order by count(*) desc, error_code`,
    { window: failureWindowS },
  );
  const { rows: latest } = await db.raw<{ rows: FailedGeneration[] }>(
    `select g.id, g.user_id, g.error_code, g.kind, e.slug as effect_slug, g.finished_at, g.replayed_as
     from generations g left join effects e on e.id = g.effect_id
     where g.status = 'failed' and g.finished_at > now() - :window * interval '1 second'
       and (:code::text is null or g.error_code = :code::text)
     order by g.finished_at desc limit :listed`,
    { window: failureWindowS, code, listed },
  );
  return { byCode, latest, code };
}

function replayAction(config: Config, generation: FailedGeneration) {
  if (generation.replayed_as) return html`<span class="tag ok">replayed as <span class="mono">${generation.replayed_as}</span></span>`;
  if (generation.error_code === 'canceled') return html`<span class="tag">cancelled by its owner</span>`;
  return html`<form class="inline" method="post" action="/ops/failed/replay">${formTokenField(config)}<input type="hidden" name="id" value="${generation.id}"><button class="button" type="submit">Replay</button></form>`;
}

export function failuresPage(config: Config, failures: Failures): string {
  const codeRows = failures.byCode.map((count) => html`<tr data-code="${count.error_code}">
<td><a class="mono" href="/ops/failed?code=${encodeURIComponent(count.error_code)}">${count.error_code}</a></td>
<td class="number count">${count.count}</td><td class="number not-replayed">${count.not_replayed}</td><td>${relativeTime(count.last_at)}</td>
<td>${count.not_replayed ? html`<form class="inline" method="post" action="/ops/failed/replay">${formTokenField(config)}<input type="hidden" name="error_code" value="${count.error_code}"><button class="button secondary" type="submit">Replay all ${count.not_replayed}</button></form>` : '—'}</td>
</tr>`);
  const generationRows = failures.latest.map((generation) => html`<tr data-generation="${generation.id}">
<td class="mono">${generation.id}</td><td class="mono">${generation.error_code}</td><td>${generation.effect_slug ?? generation.kind}</td>
<td class="mono">${generation.user_id}</td><td>${utcTime(generation.finished_at)}</td><td class="action">${replayAction(config, generation)}</td>
</tr>`);
  return consolePage('/ops/failed', 'Failed generations', html`<p>Failed in the last 24 hours, by error code. A replay starts a new generation with the same photos at the effect's current price, charged to the user (skipped when they cannot pay); each failure is replayed at most once, like <span class="mono">npm run replay-failed -- --apply</span>.</p>
${table(html`<tr><th>error code</th><th class="number">failed</th><th class="number">not replayed</th><th>last</th><th></th></tr>`, codeRows, 'No generation failed in the last 24 hours.')}
<h2>${failures.code ? html`Latest with <span class="mono">${failures.code}</span> (<a href="/ops/failed">all codes</a>)` : 'Latest'}</h2>
${table(html`<tr><th>generation</th><th>error code</th><th>effect</th><th>user</th><th>failed</th><th></th></tr>`, generationRows, 'None.')}`);
}

const actionText: Record<ReplayOutcome['action'], string> = {
  replayed: 'replayed',
  'would replay': 'would replay',
  'already replayed': 'already replayed',
  skipped: 'skipped',
};

export function replayResultPage(outcomes: ReplayOutcome[]): string {
  const rows = outcomes.map((outcome) => html`<tr data-generation="${outcome.failedId}">
<td class="mono">${outcome.failedId}</td>
<td><span class="tag ${outcome.action === 'replayed' ? 'ok' : outcome.action === 'skipped' ? 'bad' : ''}">${actionText[outcome.action]}</span></td>
<td class="mono new-id">${outcome.newId ?? '—'}</td><td>${outcome.reason ?? ''}</td>
</tr>`);
  const count = (action: ReplayOutcome['action']) => outcomes.filter((outcome) => outcome.action === action).length;
  return consolePage('/ops/failed', 'Replay', html`<p id="replay-summary">${count('replayed')} replayed, ${count('already replayed')} already replayed before, ${count('skipped')} skipped.</p>
${table(html`<tr><th>failed generation</th><th>outcome</th><th>new generation</th><th>why</th></tr>`, rows, 'Nothing to replay: the generation is not a failed one.')}
<p><a class="button secondary" href="/ops/failed">Back to failed generations</a></p>`);
}
