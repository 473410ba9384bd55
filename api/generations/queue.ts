import type { Knex } from 'knex';
import type { ProviderKind } from '../../common/model-route';
import type { GenerationRow } from '../../db/generations/model';
import { countFreeSlots } from '../../db/pool/count-free-slots';

/** Where a pending generation stands in line and how long it will likely wait (README, "Queue position" and "Cancel"); null outside `pending`. */
export interface QueueFigures {
  /** 1 = the next to be submitted. */
  queue_position: number | null;
  estimated_wait_s: number | null;
}

/** How fast a kind's line moves: the same for every caller, so each web process reads it at most this often. */
const paceTtlMs = 2000;
/** Recent completions are counted over this window. */
const paceWindowS = 300;
/** Below this many completions in the window the pace comes from the slots and the mean run time instead. */
const fewCompletions = 10;
/** A task's run time assumed before any generation ever finished. */
const assumedRunS = 60;

interface PoolPace {
  /** Slots of the kind free right now: that many waiting generations are submitted at once. */
  freeSlots: number;
  /** Generations of the kind the pool finishes (and so slots it frees) per second. */
  perSecond: number;
}

const paceByDb = new WeakMap<Knex, Map<ProviderKind, { at: number; pace: Promise<PoolPace> }>>();

/**
 * A `pending` generation's place: the waiting generations of its provider kind ahead of it in the
 * dispatcher's FIFO order of that kind's line (`generations_waiting`: by `created_at`, the
 * `created_on` of their tickets) plus one; another kind's line never moves it. One claimed by a
 * dispatcher is being submitted at this moment: position 1, no wait.
 */
export async function queueFiguresOf(db: Knex, generation: Pick<GenerationRow, 'id' | 'status' | 'dispatch_until' | 'provider_kind'>): Promise<QueueFigures> {
  if (generation.status !== 'pending') return { queue_position: null, estimated_wait_s: null };
  if (generation.dispatch_until !== null) return { queue_position: 1, estimated_wait_s: 0 };
  // The generation's own created_at is read in SQL: a JS Date would drop its microseconds.
  const { rows } = await db.raw<{ rows: { ahead: number }[] }>(
    `select count(*)::integer as ahead
     from generations waiting, (select provider_kind, created_at, id from generations where id = :id) mine
     where waiting.status = 'pending' and waiting.dispatch_until is null and waiting.provider_kind = mine.provider_kind
       and (waiting.created_at, waiting.id) < (mine.created_at, mine.id)`,
    { id: generation.id },
  );
  return figures(rows[0].ahead + 1, await poolPace(db, generation.provider_kind));
}

/** The place a generation of `kind` created now would get: behind every waiting one of that kind. */
export async function queueFiguresOfNew(db: Knex, kind: ProviderKind): Promise<{ queue_position: number; estimated_wait_s: number }> {
  const { rows } = await db.raw<{ rows: { waiting: number }[] }>(
    "select count(*)::integer as waiting from generations where status = 'pending' and dispatch_until is null and provider_kind = :kind",
    { kind },
  );
  return figures(rows[0].waiting + 1, await poolPace(db, kind));
}

/** The first `freeSlots` in line go at once; each one after them waits for a slot to free up. */
function figures(position: number, pace: PoolPace): { queue_position: number; estimated_wait_s: number } {
  const behindFreeSlots = Math.max(0, position - pace.freeSlots);
  return { queue_position: position, estimated_wait_s: behindFreeSlots === 0 ? 0 : Math.ceil(behindFreeSlots / pace.perSecond) };
}

function poolPace(db: Knex, kind: ProviderKind): Promise<PoolPace> {
  const paces = paceByDb.get(db) ?? new Map<ProviderKind, { at: number; pace: Promise<PoolPace> }>();
  paceByDb.set(db, paces);
  const cached = paces.get(kind);
  if (cached && Date.now() - cached.at < paceTtlMs) return cached.pace;
  const pace = measurePace(db, kind);
  paces.set(kind, { at: Date.now(), pace });
  // A failed read is not kept: the next caller reads again.
  pace.catch(() => paces.delete(kind));
  return pace;
}

/**
 * Completions per second of a kind's slots (generations of the kind that held a slot and ended)
 * over the last five minutes. A waiting generation only waits while its kind's slots are all
 * taken, when completions free them; with too few completions to tell (a pool just woken), the pace
 * is the kind's enabled slots over the mean run time of its last generations.
 */
async function measurePace(db: Knex, kind: ProviderKind): Promise<PoolPace> {
  const [free, { rows: [recent] }, { rows: [capacity] }] = await Promise.all([
    countFreeSlots(db, kind),
    db.raw<{ rows: { done: number }[] }>(
      `select count(*)::integer as done from generations
       where finished_at > now() - :windowS * interval '1 second' and started_at is not null and provider_kind = :kind`,
      { windowS: paceWindowS, kind },
    ),
    db.raw<{ rows: { slots: number; mean_run_s: number | null }[] }>(
      `select (select coalesce(sum(slots), 0)::integer from provider_accounts where enabled and kind = :kind) as slots,
         (select avg(extract(epoch from finished_at - started_at))::float8 from (
            select finished_at, started_at from generations
            where finished_at is not null and started_at is not null and provider_kind = :kind order by finished_at desc limit 50) last) as mean_run_s`,
      { kind },
    ),
  ]);
  const perSecond = recent.done >= fewCompletions
    ? recent.done / paceWindowS
    : Math.max(1, capacity.slots) / Math.max(1, capacity.mean_run_s ?? assumedRunS);
  return { freeSlots: free, perSecond };
}
