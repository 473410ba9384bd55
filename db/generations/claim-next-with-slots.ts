import type { Knex } from 'knex';
import { lockedFreeSlots } from '../pool/free-slot';
import type { KnownAccounts, Lease } from '../pool/lease-slots';
import type { GenerationRow } from './model';

export type ClaimedGeneration = Pick<GenerationRow, 'id' | 'model' | 'inputs' | 'prompt' | 'staged_inputs'> & {
  /** Its photos were read ahead of the slot (`inputs_checked_at`): the submission need not read them. */
  inputs_checked: boolean;
};

export interface ClaimWithSlot {
  generation: ClaimedGeneration;
  lease: Lease;
  /** Its `generation-submit` ticket, now `active`. */
  jobId: string;
}

export interface NextClaims {
  claims: ClaimWithSlot[];
  /**
   * Tickets taken from the line whose generation was not claimed, left as they were: `pending` false
   * when the generation moved on (the ticket is the caller's to finish), true when it is still
   * pending but not claimable now (it keeps its place).
   */
  passedOver: { jobId: string; pending: boolean }[];
  /** Tickets waiting in line when the statement ran, counted up to `room`. */
  waiting: number;
  /** Free slots the statement found and locked (at most `waiting`). */
  freeSlots: number;
}

/**
 * pending (waiting) -> pending (submitting on a leased slot), for the dispatcher of process
 * `processId`: the next `generation-submit` tickets, their generations and free slots in ONE
 * statement (no transaction: a slot's hand-over is one round trip, and a crash leaves nothing half
 * done). Up to `room` free slots are locked `for update skip locked` (two workers never lease the
 * same one; a slot whose lease ran out counts as free, `pool/free-slot.ts`), but never more than
 * tickets wait, so a round with an empty line locks no slot; then as many tickets as slots were
 * found, oldest first as pg-boss hands them out (priority, `created_on`), `for update skip locked`
 * too. The k-th ticket's generation is paired with the k-th slot, claimed until `claimS` from now
 * with the slot's account recorded as its submission attempt (written before the provider is
 * called: whoever finds it unresolved looks the task up instead of submitting again), the slot
 * leased to it for `leaseS`, and its ticket started as pg-boss's own fetch starts one (`active`,
 * `started_on`, `heartbeat_on`, a retry counted), so the ticket's end (`finishTicketsOf`, as
 * pg-boss's `complete` would) and pg-boss's `fail` and `retry` (`submit-ticket.ts`) take it later;
 * this reads and writes pg-boss's job table, whose version package.json pins.
 *
 * Guarded like every claim: only `pending` generations without a live claim and without an
 * unresolved submission; one that fails the guard is not claimed, its slot stays free and its
 * ticket untouched. The status stays `pending` (the contract's `processing` starts when the provider
 * accepted); a claim past its time, or of a dead process, is taken back by the sweeps.
 */
export async function claimNextWithSlots(
  db: Knex,
  room: number,
  settings: { claimS: number; leaseS: number; processId: string; knownAccounts: KnownAccounts },
): Promise<NextClaims> {
  const inLine = "j.name = 'generation-submit' and j.state < 'active' and not j.blocked and j.start_after <= now()";
  // The generations and tickets are found by arrays of ids (one-time inputs, as pg-boss's fetch
  // does): with the statistics of a table that filled a moment ago, a join to the CTE was planned
  // as a scan of every waiting row.
  const { rows: [row] } = await db.raw<{ rows: {
    claims: (ClaimedGeneration & { account_id: number; slot_no: number; job_id: string })[];
    passed_over: { jobId: string; pending: boolean }[];
    waiting: number;
    free_slots: number;
  }[] }>(
    `with line as materialized (
       select count(*)::integer as waiting from (select 1 from pgboss.job j where ${inLine} limit :room) waiting
     ), free as materialized (${lockedFreeSlots('(select waiting from line)')}),
     tickets as materialized (
       select job_id, generation_id, row_number() over (order by priority desc, created_on) as rank
       from (
         select j.id as job_id, (j.data->>'generationId')::uuid as generation_id, j.priority, j.created_on
         from pgboss.job j
         where ${inLine}
         order by j.priority desc, j.created_on
         limit (select count(*) from free)
         for update of j skip locked
       ) locked
     ), claimed as (
       update generations g
       set dispatch_until = now() + :claimS * interval '1 second', dispatch_attempts = g.dispatch_attempts + 1,
         claimed_by = :processId, submission_account_id = f.account_id
       from tickets t join free f on f.rank = t.rank
       where g.id = any(array(select generation_id from tickets)) and g.id = t.generation_id and g.status = 'pending' and (g.dispatch_until is null or g.dispatch_until < now())
         and g.submission_account_id is null
       returning g.id, g.model, g.inputs, g.prompt, g.inputs_checked_at is not null as inputs_checked,
         -- Staged photos only while the provider keeps them a while yet (its clock may run ahead of ours).
         case when g.staged_inputs_until > now() + interval '1 minute' then g.staged_inputs end as staged_inputs,
         f.account_id, f.slot_no, t.job_id
     ), leased as (
       update provider_slots s
       set generation_id = c.id, user_effect_id = null, lease_expires_at = now() + :leaseS * interval '1 second'
       from claimed c
       where s.account_id = c.account_id and s.slot_no = c.slot_no
     ), started as (
       update pgboss.job j
       set state = 'active', started_on = now(), heartbeat_on = now(),
         retry_count = case when j.started_on is not null then j.retry_count + 1 else j.retry_count end
       where j.name = 'generation-submit' and j.id = any(array(select job_id from claimed))
     )
     select (select waiting from line) as waiting, (select count(*) from free)::integer as free_slots,
       (select coalesce(json_agg(c), '[]') from claimed c) as claims,
       (select coalesce(json_agg(json_build_object('jobId', t.job_id, 'pending', coalesce(g.status = 'pending', false))), '[]')
        from tickets t left join generations g on g.id = t.generation_id
        where not exists (select 1 from claimed c where c.id = t.generation_id)) as passed_over`,
    { room, claimS: settings.claimS, leaseS: settings.leaseS, processId: settings.processId, fingerprints: settings.knownAccounts },
  );
  return {
    claims: row.claims.map(({ account_id: accountId, slot_no: slotNo, job_id: jobId, ...generation }) => ({
      generation,
      lease: { generationId: generation.id, accountId, slotNo },
      jobId,
    })),
    passedOver: row.passed_over,
    waiting: row.waiting,
    freeSlots: row.free_slots,
  };
}
