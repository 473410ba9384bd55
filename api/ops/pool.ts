import type { Knex } from 'knex';
import { html } from '../../media/pages/html';
import { freeSlot } from '../../db/pool/free-slot';
import { consolePage, relativeTime, seconds, table, utcTime } from './view';

/**
 * The provider pool as the pool's own tables see it (`pool/`): each account's kind, slots leased and
 * free, its cool-down (set from the provider's 429 Retry-After) or open circuit (the provider does
 * not answer it, `pool/account-circuits.ts`), and over the last hour the
 * generations it finished: failures by error code and the time from submission to result.
 */
export interface PoolAccount {
  id: number;
  kind: string;
  label: string;
  enabled: boolean;
  /** Since when the provider has not answered calls on it (its circuit is open); null: it answers. */
  circuit_opened_at: Date | null;
  slots: number;
  leased: number;
  cooldown_until: Date | null;
  succeeded: number;
  failed: number;
  p50_s: number | null;
  p95_s: number | null;
  errors: { error_code: string; count: number; last_at: Date }[];
}

const recentWindowS = 3600;

export async function readPool(db: Knex): Promise<PoolAccount[]> {
  const { rows } = await db.raw<{ rows: Omit<PoolAccount, 'errors'>[] }>(
    `with recent as (
       select provider_account_id as account_id,
         count(*) filter (where status = 'succeeded')::int as succeeded,
         count(*) filter (where status = 'failed')::int as failed,
         percentile_cont(0.5) within group (order by extract(epoch from finished_at - started_at)) filter (where status = 'succeeded') as p50_s,
         percentile_cont(0.95) within group (order by extract(epoch from finished_at - started_at)) filter (where status = 'succeeded') as p95_s
       from generations
       where finished_at > now() - :window * interval '1 second' and provider_account_id is not null
       group by provider_account_id
     ), slots as (
       select a.id, count(s.account_id) filter (where not ${freeSlot('s')} and s.slot_no < a.slots)::int as leased
       from provider_accounts a left join provider_slots s on s.account_id = a.id
       group by a.id
     )
     select a.id, a.kind, a.label, a.enabled, a.circuit_opened_at, a.slots, slots.leased,
       case when a.cooldown_until > now() then a.cooldown_until end as cooldown_until,
       coalesce(recent.succeeded, 0) as succeeded, coalesce(recent.failed, 0) as failed,
       recent.p50_s::float8 as p50_s, recent.p95_s::float8 as p95_s
     from provider_accounts a join slots on slots.id = a.id left join recent on recent.account_id = a.id
     order by a.enabled desc, a.id`,
    { window: recentWindowS },
  );
  const { rows: errors } = await db.raw<{ rows: ({ account_id: number } & PoolAccount['errors'][number])[] }>(
    `select provider_account_id as account_id, error_code, count(*)::int as count, max(finished_at) as last_at
     from generations
     where finished_at > now() - :window * interval '1 second' and status = 'failed' and provider_account_id is not null
     group by provider_account_id, error_code
     order by count(*) desc, error_code`,
    { window: recentWindowS },
  );
  return rows.map((row) => ({ ...row, errors: errors.filter((error) => error.account_id === row.id) }));
}

function state(account: PoolAccount) {
  if (!account.enabled) return html`<span class="tag">disabled</span>`;
  if (account.circuit_opened_at) return html`<span class="tag bad" title="since ${utcTime(account.circuit_opened_at)}">not answering</span>`;
  if (account.cooldown_until) return html`<span class="tag wait">cooling down</span>`;
  if (account.leased >= account.slots) return html`<span class="tag bad">full</span>`;
  return html`<span class="tag ok">available</span>`;
}

export function poolPage(accounts: PoolAccount[]): string {
  const enabled = accounts.filter((account) => account.enabled);
  const slots = enabled.reduce((sum, account) => sum + account.slots, 0);
  const leased = enabled.reduce((sum, account) => sum + account.leased, 0);
  const rows = accounts.map((account) => html`<tr data-account="${account.label}">
<td class="mono">${account.label}</td>
<td>${account.kind}</td>
<td>${state(account)}</td>
<td class="number">${account.slots}</td>
<td class="number leased">${account.leased}</td>
<td class="number free">${account.enabled ? account.slots - account.leased : 0}</td>
<td class="cooldown">${account.cooldown_until ? html`until ${utcTime(account.cooldown_until)} (${relativeTime(account.cooldown_until)})` : '—'}</td>
<td class="number">${account.succeeded}</td>
<td class="number">${account.failed}</td>
<td class="errors">${account.errors.length ? account.errors.map((error) => html`<span class="tag bad">${error.error_code} × ${error.count}</span> `) : '—'}</td>
<td class="number latency">${seconds(account.p50_s)} / ${seconds(account.p95_s)}</td>
</tr>`);
  return consolePage('/ops/pool', 'Provider pool', html`<div class="figures">
<div class="figure"><strong id="slots-leased">${leased}</strong>slots leased</div>
<div class="figure"><strong id="slots-free">${slots - leased}</strong>slots free</div>
<div class="figure"><strong>${enabled.filter((account) => account.cooldown_until).length}</strong>accounts cooling down</div>
</div>
${table(html`<tr><th>account</th><th>kind</th><th>state</th><th class="number">slots</th><th class="number">leased</th><th class="number">free</th><th>cool-down</th><th class="number">succeeded (1 h)</th><th class="number">failed (1 h)</th><th>errors (1 h)</th><th class="number">latency p50 / p95 (1 h)</th></tr>`, rows, 'No provider account yet: a worker syncs PROVIDER_ACCOUNTS when it starts.')}
<p class="hint">Latency: from the provider accepting a task to its result stored, over the generations the account finished in the last hour. A cool-down comes from the provider's 429 and its Retry-After; the pool leases no slot of the account until it ends. An account not answering (its circuit open) gets no submission, and one probe after each backoff.</p>`);
}
