import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import type { ModelRoute, ProviderKind } from '../../common/model-route';
import { claimAccountProbe } from '../pool/claim-account-probe';
import { freeSlot, usableAccount } from '../pool/free-slot';
import type { KnownAccounts, Lease } from '../pool/lease-slots';
import { bossIn, submitQueueOf } from '../queues';
import type { GenerationRow } from './model';
import { finishSubmitJob, returnSubmitJob } from './submit-ticket';

export type ClaimedGeneration = Pick<GenerationRow, 'id' | 'inputs' | 'prompt' | 'staged_inputs' | 'provider_kind'> & {
  route: ModelRoute;
  /** Its photos were read ahead of the slot (`inputs_checked_at`) or by the API (`photo_headers_checked`): the submission need not read them. */
  inputs_checked: boolean;
};

export interface ClaimWithSlot {
  generation: ClaimedGeneration;
  lease: Lease;
  /** Its ticket in its kind's `generation-submit.<kind>`, now `active`. */
  jobId: string;
  /** The slot's account had calls the provider did not answer (`pool/account-circuits.ts`): an answer now resets it. */
  accountFailing: boolean;
}

export interface NextClaims {
  claims: ClaimWithSlot[];
  /**
   * Tickets fetched whose generation was not claimed: finished when the generation had moved on,
   * put back at their place when it is still pending (another transaction holds it, or a live claim).
   */
  passedOver: number;
  /** Generations waiting in line when the round began, counted up to `room` per kind. */
  waiting: number;
  /** Free slots the round found and locked (at most `waiting` of each kind). */
  freeSlots: number;
}

interface LockedSlot {
  kind: ProviderKind;
  account_id: number;
  slot_no: number;
  account_failing: boolean;
  circuit_open: boolean;
}

/**
 * pending (waiting) -> pending (submitting on a leased slot), for every kind of `kinds`, in one
 * transaction (a crash leaves it done or not at all):
 * 1. per kind, as many free slots as its line has waiting generations (up to `room`) are locked
 *    `skip locked`, so an empty line locks nothing and one kind never holds another's slots; an
 *    account whose circuit is open offers one slot, its probe (`pool/account-circuits.ts`);
 * 2. as many tickets of the kind's queue are fetched with pg-boss's `fetch`, oldest first;
 * 3. the k-th ticket gets the k-th slot: its generation claimed until `claimS`, the submission
 *    attempt recorded before the provider is called (whoever finds it unresolved looks the task up
 *    instead of submitting again), the slot leased for `leaseS`; a generation held by another
 *    transaction is passed over, never waited for;
 * 4. a ticket passed over goes back to its place while its generation is pending.
 * The status stays `pending` until the provider accepts; the sweeps take back stale claims.
 */
export async function claimNextWithSlots(
  db: Knex,
  boss: PgBoss,
  room: number,
  settings: { claimS: number; leaseS: number; processId: string; knownAccounts: KnownAccounts; kinds: readonly ProviderKind[]; probeHoldMs: number },
): Promise<NextClaims> {
  return db.transaction(async (trx) => {
    const { slots: locked, waiting } = await lockSlotsForLines(trx, room, settings.kinds, settings.knownAccounts);
    const slots = await withProbes(trx, locked, settings.probeHoldMs);
    if (!slots.length) return { claims: [], passedOver: 0, waiting, freeSlots: 0 };
    const tickets: { jobId: string; generationId: string; slot: LockedSlot }[] = [];
    for (const kind of settings.kinds) {
      const ofKind = slots.filter((slot) => slot.kind === kind);
      if (!ofKind.length) continue;
      const fetched = await boss.fetch<{ generationId: string }>(submitQueueOf(kind), { batchSize: ofKind.length, db: bossIn(trx) });
      fetched.forEach((job, index) => tickets.push({ jobId: job.id, generationId: job.data.generationId, slot: ofKind[index] }));
    }
    if (!tickets.length) return { claims: [], passedOver: 0, waiting, freeSlots: slots.length };
    const { claims, passedOver } = await claimTicketed(trx, tickets, settings);
    for (const ticket of passedOver) {
      if (ticket.pending) await returnSubmitJob(boss, trx, ticket.kind, ticket.jobId);
      else await finishSubmitJob(boss, trx, ticket.kind, ticket.jobId);
    }
    return { claims, passedOver: passedOver.length, waiting, freeSlots: slots.length };
  });
}

/** Of the slots of accounts whose circuit is open, one per account whose probe this round claims. */
async function withProbes(trx: Knex.Transaction, slots: LockedSlot[], holdMs: number): Promise<LockedSlot[]> {
  const probing = new Set<number>();
  for (const accountId of new Set(slots.filter((slot) => slot.circuit_open).map((slot) => slot.account_id))) {
    if ((await claimAccountProbe(trx, accountId, holdMs)).go) probing.add(accountId);
  }
  return slots.filter((slot, index) => !slot.circuit_open
    || (probing.has(slot.account_id) && slots.findIndex((first) => first.account_id === slot.account_id) === index));
}

/** Step 1: per kind, the waiting generations counted up to `room` and as many free slots of that kind locked. */
async function lockSlotsForLines(
  trx: Knex.Transaction,
  room: number,
  kinds: readonly ProviderKind[],
  knownAccounts: KnownAccounts,
): Promise<{ slots: LockedSlot[]; waiting: number }> {
  const { rows } = await trx.raw<{ rows: (Pick<LockedSlot, 'kind'> & Partial<LockedSlot> & { waiting: number; account_id: number | null })[] }>(
    `with line as materialized (
       select wanted.kind, (
         select count(*)::integer from (
           select 1 from generations g
           where g.status = 'pending' and g.dispatch_until is null and g.provider_kind = wanted.kind
           limit :room
         ) waiting
       ) as waiting
       from unnest(:kinds::text[]) as wanted (kind)
     )
     select line.kind, line.waiting, free.account_id, free.slot_no, free.account_failing, free.circuit_open
     from line left join lateral (
       select s.account_id, s.slot_no, a.failures > 0 as account_failing, a.circuit_opened_at is not null as circuit_open
       from provider_slots s join provider_accounts a on a.id = s.account_id
       where a.kind = line.kind and ${freeSlot('s')} and s.slot_no < a.slots and ${usableAccount('a')}
       order by s.slot_no, s.account_id
       limit line.waiting
       for update of s skip locked
     ) free on true`,
    { room, kinds: [...kinds], fingerprints: knownAccounts },
  );
  const waiting = new Map(rows.map((row) => [row.kind, row.waiting]));
  return {
    slots: rows.flatMap((row) => (row.account_id === null ? [] : [{
      kind: row.kind, account_id: row.account_id, slot_no: row.slot_no!, account_failing: row.account_failing!, circuit_open: row.circuit_open!,
    }])),
    waiting: [...waiting.values()].reduce((sum, count) => sum + count, 0),
  };
}

/** Step 3: the tickets' generations claimed and their slots leased, in one statement. */
async function claimTicketed(
  trx: Knex.Transaction,
  tickets: { jobId: string; generationId: string; slot: LockedSlot }[],
  settings: { claimS: number; leaseS: number; processId: string },
): Promise<{ claims: ClaimWithSlot[]; passedOver: { jobId: string; kind: ProviderKind; pending: boolean }[] }> {
  // The generations are found by an array of ids (a one-time input): with the statistics of a table
  // that filled a moment ago, a join to the tickets was planned as a scan of every waiting row.
  const { rows: [row] } = await trx.raw<{ rows: {
    claims: (Omit<ClaimedGeneration, 'route'> & { route: ModelRoute | null; model: string; account_id: number; slot_no: number; job_id: string })[];
    passed_over: { jobId: string; pending: boolean }[];
  }[] }>(
    `with tickets as materialized (
       -- Its columns named, not \`*\`: a statement returning \`*\` is never kept prepared (db/prepared-statements.ts).
       select t.job_id, t.generation_id, t.account_id, t.slot_no
       from unnest(:jobIds::uuid[], :generationIds::uuid[], :accountIds::integer[], :slotNos::integer[]) as t (job_id, generation_id, account_id, slot_no)
     ), claimable as materialized (
       select g.id from generations g
       where g.id = any(:generationIds::uuid[]) and g.status = 'pending' and (g.dispatch_until is null or g.dispatch_until < now())
         and g.submission_account_id is null
       for update skip locked
     ), claimed as (
       update generations g
       set dispatch_until = now() + :claimS * interval '1 second', dispatch_attempts = g.dispatch_attempts + 1,
         claimed_by = :processId, submission_account_id = t.account_id
       from tickets t
       where g.id = any(array(select id from claimable)) and g.id = t.generation_id
       returning g.id, g.provider_kind, g.route, g.model, g.inputs, g.prompt, (g.inputs_checked_at is not null or g.photo_headers_checked) as inputs_checked,
         -- Staged photos only while the provider keeps them a while yet (its clock may run ahead of ours).
         case when g.staged_inputs_until > now() + interval '1 minute' then g.staged_inputs end as staged_inputs,
         t.account_id, t.slot_no, t.job_id
     ), leased as (
       update provider_slots s
       set generation_id = c.id, user_effect_id = null, lease_expires_at = now() + :leaseS * interval '1 second'
       from claimed c
       where s.account_id = c.account_id and s.slot_no = c.slot_no
     )
     select (select coalesce(json_agg(c), '[]') from claimed c) as claims,
       (select coalesce(json_agg(json_build_object('jobId', t.job_id, 'pending', coalesce(g.status = 'pending', false))), '[]')
        from tickets t left join generations g on g.id = t.generation_id
        where not exists (select 1 from claimed c where c.id = t.generation_id)) as passed_over`,
    {
      jobIds: tickets.map((ticket) => ticket.jobId),
      generationIds: tickets.map((ticket) => ticket.generationId),
      accountIds: tickets.map((ticket) => ticket.slot.account_id),
      slotNos: tickets.map((ticket) => ticket.slot.slot_no),
      claimS: settings.claimS,
      leaseS: settings.leaseS,
      processId: settings.processId,
    },
  );
  const kindOfJob = new Map(tickets.map((ticket) => [ticket.jobId, ticket.slot.kind]));
  const failing = new Set(tickets.filter((ticket) => ticket.slot.account_failing).map((ticket) => ticket.slot.account_id));
  return {
    claims: row.claims.map(({ account_id: accountId, slot_no: slotNo, job_id: jobId, model, route, ...generation }) => ({
      generation: { ...generation, route: route ?? { model } },
      lease: { generationId: generation.id, accountId, slotNo },
      jobId,
      accountFailing: failing.has(accountId),
    })),
    passedOver: row.passed_over.map((ticket) => ({ ...ticket, kind: kindOfJob.get(ticket.jobId)! })),
  };
}
