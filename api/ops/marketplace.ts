import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import type { QueuePayloads } from '../../db/queues';
import type { Config } from '../../config';
import { quantity } from '../../common/plural';
import type { UserEffectRow } from '../../db/user-effects/model';
import { removalReason, removalReasonMaxLength, type OperatorRemoval } from '../../db/user-effects/remove-by-operator';
import { html, type Html } from '../../media/pages/html';
import { freeSlot } from '../../db/pool/free-slot';
import { errors, type ErrorDetail } from '../http/errors';
import { isUuid } from '../../common/validation';
import { consolePage, duration, formTokenField, relativeTime, table, utcTime } from './view';

/**
 * The marketplace of user effects for its operator: the moderation queue (every user effect still
 * `processing`, oldest round first, with where its round stands) and the live effects (`approved`,
 * newest first), each with an Archive form. Archiving is `removeByOperator`
 * (db/user-effects/remove-by-operator.ts), the code path of `npm run user-effects -- archive`:
 * archived with the reason, pending earnings reversed, the author told by push, at most once.
 */

/** A round waiting longer than this is shown as slow (the overview's figure turns red). */
export const slowModerationS = 15 * 60;
const queueListed = 100;
const liveListed = 50;

export interface MarketplaceFigures {
  /** User effects in `processing`: in the moderation queue. */
  waiting: number;
  /** Of those, the ones whose round was asked for more than `slowModerationS` ago. */
  slow: number;
  /** How long the oldest round has waited; null when none waits. */
  oldest_s: number | null;
  /** User effects whose round holds a provider slot now (with the moderation model). */
  moderating: number;
  /** User effects in `approved`: live in the catalog. */
  live: number;
}

export async function readMarketplaceFigures(db: Knex): Promise<MarketplaceFigures> {
  const { rows: [figures] } = await db.raw<{ rows: MarketplaceFigures[] }>(
    `select count(*)::int as waiting,
       count(*) filter (where submitted_at < now() - :slow * interval '1 second')::int as slow,
       extract(epoch from now() - min(submitted_at))::float8 as oldest_s,
       (select count(distinct s.user_effect_id) from provider_slots s where s.user_effect_id is not null and not ${freeSlot('s')})::int as moderating,
       (select count(*) from user_effects where status = 'approved')::int as live
     from user_effects where status = 'processing'`,
    { slow: slowModerationS },
  );
  return { ...figures, oldest_s: figures.oldest_s === null ? null : Math.max(0, figures.oldest_s) };
}

export interface QueuedUserEffect {
  id: string;
  user_id: string;
  author_name: string | null;
  name: string;
  output_type: UserEffectRow['output_type'];
  visibility: UserEffectRow['visibility'];
  moderation_round: number;
  verdict: UserEffectRow['verdict'];
  submitted_at: Date;
  /** The provider slot the round holds now, if any. */
  slot_account: string | null;
  slot_no: number | null;
  /** The round's `user-effect-moderation` job: its pg-boss state and the tries that failed (no free slot, no answer). */
  job_state: string | null;
  job_retries: number | null;
}

export interface LiveUserEffect {
  id: string;
  user_id: string;
  author_name: string | null;
  name: string;
  output_type: UserEffectRow['output_type'];
  effect_id: string | null;
  approved_at: Date | null;
  /** Succeeded generations of its catalog effect. */
  generations: number;
  /** Its earnings not settled yet: what an archive reverses. */
  pending_earnings: number;
  pending_credits: number;
}

/**
 * The oldest rounds first (`user_effects_moderation_queue`), each with the slot it holds and its
 * round's job: the moderation queue's jobs as pg-boss answers them (`findJobs`), matched by user
 * effect and round, the newest of each.
 */
async function readQueue(db: Knex, boss: PgBoss): Promise<QueuedUserEffect[]> {
  const [{ rows }, jobs] = await Promise.all([db.raw<{ rows: Omit<QueuedUserEffect, 'job_state' | 'job_retries'>[] }>(
    `select ue.id, ue.user_id, u.name as author_name, ue.name, ue.output_type, ue.visibility, ue.moderation_round, ue.verdict,
       ue.submitted_at, slot.label as slot_account, slot.slot_no
     from user_effects ue
     join users u on u.id = ue.user_id
     left join lateral (
       select a.label, s.slot_no from provider_slots s join provider_accounts a on a.id = s.account_id
       where s.user_effect_id = ue.id and not ${freeSlot('s')}
       order by s.lease_expires_at desc limit 1
     ) slot on true
     where ue.status = 'processing'
     order by ue.submitted_at, ue.id
     limit :listed`,
    { listed: queueListed },
  ), boss.findJobs<QueuePayloads['user-effect-moderation']>('user-effect-moderation')]);
  const newestJob = new Map<string, { state: string; retryCount: number; createdOn: Date }>();
  for (const job of jobs) {
    const round = `${job.data.userEffectId}:${job.data.round}`;
    const known = newestJob.get(round);
    if (!known || known.createdOn < job.createdOn) newestJob.set(round, job);
  }
  return rows.map((row) => {
    const job = newestJob.get(`${row.id}:${row.moderation_round}`);
    return { ...row, job_state: job?.state ?? null, job_retries: job?.retryCount ?? null };
  });
}

/** The newest approvals first (`user_effects_live`), with what an archive would reverse. */
async function readLive(db: Knex): Promise<LiveUserEffect[]> {
  const { rows } = await db.raw<{ rows: LiveUserEffect[] }>(
    `select ue.id, ue.user_id, u.name as author_name, ue.name, ue.output_type, ue.effect_id, ue.approved_at,
       coalesce(e.success_count, 0) as generations, pending.count as pending_earnings, pending.credits as pending_credits
     from user_effects ue
     join users u on u.id = ue.user_id
     left join effects e on e.id = ue.effect_id
     cross join lateral (
       select count(*)::int as count, coalesce(sum(amount), 0)::int as credits
       from user_effect_earnings where user_effect_id = ue.id and status = 'pending'
     ) pending
     where ue.status = 'approved'
     order by ue.approved_at desc, ue.id desc
     limit :listed`,
    { listed: liveListed },
  );
  return rows;
}

/**
 * What the page says after an Archive form (the post redirects here with `?<outcome>=<id>`): read
 * from the user effect as it is now, so the message is true whoever opens the link.
 */
export interface ArchiveFlash {
  outcome: OperatorRemoval['outcome'];
  id: string;
  effect: { name: string; archived_by: UserEffectRow['archived_by']; archive_reason: string | null; reversed_earnings: number; reversed_credits: number } | null;
}

const outcomes: OperatorRemoval['outcome'][] = ['archived', 'already_archived', 'not_found'];

async function readFlash(db: Knex, query: Record<string, unknown>): Promise<ArchiveFlash | null> {
  const outcome = outcomes.find((name) => typeof query[name] === 'string' && isUuid(query[name]));
  if (!outcome) return null;
  const id = (query[outcome] as string).toLowerCase();
  if (outcome === 'not_found') return { outcome, id, effect: null };
  const { rows: [effect] } = await db.raw<{ rows: NonNullable<ArchiveFlash['effect']>[] }>(
    `select ue.name, ue.archived_by, ue.archive_reason, reversed.count as reversed_earnings, reversed.credits as reversed_credits
     from user_effects ue cross join lateral (
       select count(*)::int as count, coalesce(sum(amount), 0)::int as credits
       from user_effect_earnings where user_effect_id = ue.id and status = 'reversed'
     ) reversed
     where ue.id = :id and ue.status = 'archived'`,
    { id },
  );
  // Only an operator's archive is one this form made (an author's sends no push, reverses nothing).
  if (!effect || (outcome === 'archived' && effect.archived_by !== 'operator')) return null;
  return { outcome, id, effect };
}

export interface Marketplace {
  figures: MarketplaceFigures;
  queue: QueuedUserEffect[];
  live: LiveUserEffect[];
  flash: ArchiveFlash | null;
}

export async function readMarketplace(db: Knex, boss: PgBoss, query: Record<string, unknown>): Promise<Marketplace> {
  const [figures, queue, live, flash] = await Promise.all([readMarketplaceFigures(db), readQueue(db, boss), readLive(db), readFlash(db, query)]);
  return { figures, queue, live, flash };
}

const reasonProblems: Record<'blank' | 'too_long' | 'nul' | 'not_text', ErrorDetail> = {
  blank: { loc: ['body', 'reason'], msg: 'say why the effect is archived', type: 'missing' },
  not_text: { loc: ['body', 'reason'], msg: 'one reason, as text', type: 'type' },
  too_long: { loc: ['body', 'reason'], msg: `at most ${removalReasonMaxLength} characters`, type: 'maxLength' },
  nul: { loc: ['body', 'reason'], msg: 'must not contain the NUL character (U+0000)', type: 'noNulCharacter' },
};

/** The Archive form's fields (the reason by the CLI's rule, `removalReason`), or `422 validation_error`. */
export function archiveForm(body: Record<string, unknown>): { userEffectId: string; reason: string } {
  const { id, reason } = body;
  const problems: ErrorDetail[] = [];
  if (!(typeof id === 'string' && isUuid(id))) problems.push({ loc: ['body', 'id'], msg: 'not a user effect id', type: id === undefined ? 'missing' : 'uuid' });
  const checked = reason === undefined ? { problem: 'blank' as const } : typeof reason === 'string' ? removalReason(reason) : { problem: 'not_text' as const };
  if ('problem' in checked) problems.push(reasonProblems[checked.problem]);
  if (problems.length || 'problem' in checked) throw errors.validation(problems);
  return { userEffectId: (id as string).toLowerCase(), reason: checked.reason };
}

/** A user effect's name with its id under it (what the CLI and the by-id form take). */
function userEffect(row: { name: string; id: string }): Html {
  return html`${row.name}
<span class="mono id">${row.id}</span>`;
}

/** The author's profile name (when they gave one) and the start of their user id, all of it on hover. */
function author(row: { author_name: string | null; user_id: string }): Html {
  return html`${row.author_name ?? ''}
<span class="mono id" title="${row.user_id}">${row.user_id.slice(0, 8)}…</span>`;
}

/** `40 min` (a wait) or `40 min ago` (a moment), the UTC time under it. */
function timeWithUtc(at: Date | null, nowMs: number, shown: 'wait' | 'moment'): Html {
  if (!at) return html`—`;
  return html`${shown === 'wait' ? duration((nowMs - at.getTime()) / 1000) : relativeTime(at, nowMs)}
<span class="time">${utcTime(at)}</span>`;
}

function stage(row: QueuedUserEffect): Html {
  if (row.verdict) return html`<span class="tag">${row.verdict}, preview being built</span>`;
  if (row.slot_account) return html`<span class="tag ok">with the moderation model</span>
<span class="mono id">slot ${row.slot_account} #${row.slot_no}</span>`;
  if (row.job_state === null) return html`<span class="tag bad">no moderation job</span>`;
  if (['created', 'retry', 'active'].includes(row.job_state)) return html`<span class="tag wait">waiting for a provider slot</span>`;
  return html`<span class="tag bad">moderation job ${row.job_state}</span>`;
}

/** A reason field by the CLI's rule: required, not only spaces, at most `removalReasonMaxLength`. */
function reasonField(label: string): Html {
  return html`<input type="text" name="reason" required maxlength="${removalReasonMaxLength}" pattern=".*\\S.*" placeholder="why (required)" aria-label="${label}">`;
}

function archiveAction(config: Config, row: LiveUserEffect): Html {
  return html`<form class="archive" method="post" action="/ops/marketplace/archive">${formTokenField(config)}<input type="hidden" name="id" value="${row.id}">${reasonField(`Why archive ${row.name}`)}<button class="button danger" type="submit">Archive</button></form>`;
}

function flashMessage(flash: ArchiveFlash): Html {
  if (flash.outcome === 'not_found' || !flash.effect) {
    return html`<p class="flash bad" id="flash" role="status">No user effect <span class="mono">${flash.id}</span>: nothing archived.</p>`;
  }
  const { effect } = flash;
  const why = effect.archived_by === 'operator' ? html` by an operator: “${effect.archive_reason ?? ''}”` : ' by its author';
  if (flash.outcome === 'already_archived') {
    return html`<p class="flash wait" id="flash" role="status">“${effect.name}” (<span class="mono">${flash.id}</span>) was archived already${why}. Nothing changed.</p>`;
  }
  return html`<p class="flash ok" id="flash" role="status">Archived “${effect.name}” (<span class="mono">${flash.id}</span>)${why}. ${quantity(effect.reversed_earnings, 'pending earning')} reversed (${quantity(effect.reversed_credits, 'credit')}); the author is told by push.</p>`;
}

export function marketplacePage(config: Config, marketplace: Marketplace, nowMs = Date.now()): string {
  const { figures, queue, live, flash } = marketplace;
  const queueRows = queue.map((row) => html`<tr data-queued="${row.id}">
<td>${userEffect(row)}</td><td>${author(row)}</td><td class="nowrap">${row.output_type} · ${row.visibility}</td>
<td class="number">${row.moderation_round}</td><td>${stage(row)}</td>
<td class="number">${row.job_retries ?? '—'}</td>
<td class="${nowMs - row.submitted_at.getTime() > slowModerationS * 1000 ? 'slow' : ''}">${timeWithUtc(row.submitted_at, nowMs, 'wait')}</td>
</tr>`);
  const liveRows = live.map((row) => html`<tr data-live="${row.id}">
<td>${userEffect(row)}</td><td>${author(row)}</td><td>${row.output_type}</td>
<td>${timeWithUtc(row.approved_at, nowMs, 'moment')}</td><td class="number">${row.generations}</td>
<td class="number">${row.pending_earnings ? `${row.pending_earnings} (${row.pending_credits} cr.)` : '0'}</td>
<td class="action">${archiveAction(config, row)}</td>
</tr>`);
  return consolePage('/ops/marketplace', 'Marketplace moderation', html`${flash ? flashMessage(flash) : ''}
<div class="figures">
<div class="figure"><strong id="moderation-waiting">${figures.waiting}</strong>waiting for moderation${figures.oldest_s === null ? '' : html`, the oldest for ${duration(figures.oldest_s)}`}</div>
<div class="figure${figures.slow ? ' bad' : ''}"><strong id="moderation-slow">${figures.slow}</strong>waiting longer than ${slowModerationS / 60} min</div>
<div class="figure"><strong id="moderation-now">${figures.moderating}</strong>with the moderation model now</div>
<div class="figure"><strong id="live-count">${figures.live}</strong>live in the catalog</div>
</div>
<h2>Moderation queue</h2>
${table(html`<tr><th>user effect</th><th>author</th><th>output</th><th class="number">round</th><th>stage (provider slot)</th><th class="number">failed tries</th><th>waiting since</th></tr>`, queueRows, 'Nothing waits for moderation.')}
${figures.waiting > queue.length ? html`<p class="hint">The oldest ${queue.length} of ${figures.waiting} are listed.</p>` : ''}
<p class="hint">A round leases a provider slot like a generation (the worker role, <span class="mono">user-effect-moderation</span> jobs retried every 2 s while no slot is free), then the media role builds the sample's preview and the status moves on. A private submission is moderated too and stays its author's.</p>
<h2>Live effects</h2>
${table(html`<tr><th>user effect</th><th>author</th><th>output</th><th>published</th><th class="number">generations</th><th class="number">pending earnings</th><th></th></tr>`, liveRows, 'No user effect is live.')}
${figures.live > live.length ? html`<p class="hint">The newest ${live.length} of ${figures.live} are listed; archive an older one by its id below.</p>` : ''}
<p class="hint">Archive removes the effect from every list, page and launch, reverses its pending earnings (settled ones stay the author's) and sends the author the <span class="mono">effect_removed</span> push, once: like <span class="mono">npm run user-effects -- archive</span>.</p>
<h2>Archive by id</h2>
<form class="archive-by-id" method="post" action="/ops/marketplace/archive">${formTokenField(config)}
<label>User effect id <input type="text" name="id" required pattern="[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}" class="mono" autocomplete="off"></label>
<label>Reason ${reasonField('Why archive it')}</label>
<button class="button danger" type="submit">Archive</button>
</form>
<p class="hint">Any user effect but an archived one: in the queue, live, private or rejected.</p>`);
}
