import type { Knex } from 'knex';
import type { GenerationRow } from './model';
import { commitWithoutFlush } from '../commit-without-flush';

export type DuePoll = Pick<GenerationRow, 'id' | 'user_id' | 'output_type' | 'provider_account_id' | 'provider_task_id' | 'route'> & {
  /** Submitted longer ago than the provider timeout. */
  timed_out: boolean;
  /** The provider's callback came (and freed the slot in its own statement). */
  called_back: boolean;
  /**
   * What that callback said of the finished task (`record-task-callback.ts`), read instead of a
   * poll; taken off the row by this claim, so a retry (a failed download) asks the provider.
   */
  callback_answer: unknown;
  /** Its account had calls the provider did not answer (`pool/account-circuits.ts`): an answer now resets it. */
  account_failing: boolean;
  /** Its account's circuit is open: the poll is its probe, or waits for one. */
  circuit_open: boolean;
};

/**
 * The poll loop's claim: due `processing` tasks, oldest due first, pushed `claimS` ahead while this
 * worker polls them (`skip locked`: never two workers on one task), the claim naming the process so
 * the sweeps give it back at once if it dies. Only tasks of accounts whose key this worker has, and
 * of accounts nobody has any more (they fail `lost_account`). The commit skips the disk flush: a
 * lost claim only lets another worker poll too, which changes nothing at the provider. It also
 * answers when the next unclaimed task is due, so the loop sleeps without another round trip.
 */
export async function claimDuePolls(
  db: Knex,
  limit: number,
  claimS: number,
  providerTimeoutS: number,
  knownAccounts: string[],
  processId: string,
): Promise<{ polls: DuePoll[]; nextDueInMs: number | null }> {
  if (limit <= 0) return { polls: [], nextDueInMs: null };
  const { rows } = await db.raw<{ rows: ((DuePoll | { [K in keyof DuePoll]: null }) & { next_due_ms: number | null })[] }>(
    `with due as materialized (
       select g.id, g.callback_answer from generations g left join provider_accounts a on a.id = g.provider_account_id
       where g.status = 'processing' and g.next_poll_at <= now() and g.result_stored_at is null
         and (a.key_fingerprint = any(:fingerprints::text[]) or a.id is null or not a.enabled)
       order by g.next_poll_at
       limit :limit
       for update of g skip locked
     ), claimed as (
       update generations g
       set next_poll_at = now() + :claimS * interval '1 second', poll_count = g.poll_count + 1, claimed_by = :processId,
         callback_answer = null
       from due, (select ${commitWithoutFlush}) as commit_without_flush where g.id = due.id
       returning g.id, g.user_id, g.output_type, g.provider_account_id, g.provider_task_id, g.route,
         g.started_at < now() - :providerTimeoutS * interval '1 second' as timed_out, g.task_callback_at is not null as called_back,
         due.callback_answer
     ), accounts as (
       select a.id, a.failures > 0 as account_failing, a.circuit_opened_at is not null as circuit_open
       from provider_accounts a where a.id in (select provider_account_id from claimed)
     ), next as (
       select (extract(epoch from min(next_poll_at) - now()) * 1000)::float8 as next_due_ms
       from generations where status = 'processing' and next_poll_at is not null and id not in (select id from claimed)
     )
     select claimed.id, claimed.user_id, claimed.output_type, claimed.provider_account_id, claimed.provider_task_id, claimed.route,
       claimed.timed_out, claimed.called_back, claimed.callback_answer, coalesce(accounts.account_failing, false) as account_failing,
       coalesce(accounts.circuit_open, false) as circuit_open, next.next_due_ms
     from next left join claimed on true left join accounts on accounts.id = claimed.provider_account_id`,
    { limit, claimS, providerTimeoutS, fingerprints: knownAccounts, processId },
  );
  const polls = rows.flatMap(({ next_due_ms: _next, ...poll }) => (poll.id === null ? [] : [poll as DuePoll]));
  return { polls, nextDueInMs: rows[0].next_due_ms };
}
