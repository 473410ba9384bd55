import type { Knex } from 'knex';
import type { Config } from '../../config';
import { commitWithoutFlush } from '../commit-without-flush';

/**
 * How often a running task is polled. Polling alone finds a finished task after 1/15 of its run so
 * far, between `minMs` and `maxMs`: every ~100 ms in the first seconds, then slower, capped, so the
 * delay in noticing the end stays near 3% of the run on average (7% at worst). While the provider's
 * task callbacks reach us (one came within `callbackTrustS`, on any account: they come to the URL
 * we give with each task, so it is our address that they prove), a callback brings the end at once,
 * and polls are only the fallback for a lost one: after 1/3 of the run so far, at least
 * `callbackFallbackMinMs` and `minMs`, at most `maxMs` (never sooner than polling alone would). That
 * is 2 polls of a 1.5 s task instead of 15. When
 * callbacks stop coming, every task is polled densely again within `callbackTrustS`.
 */
export interface PollPacing {
  minMs: number;
  maxMs: number;
  callbackFallbackMinMs: number;
  callbackTrustS: number;
}

export function pollPacing(settings: Config['generations']): PollPacing {
  return {
    minMs: settings.pollMinIntervalMs,
    maxMs: settings.pollMaxIntervalMs,
    callbackFallbackMinMs: settings.callbackFallbackPollMinMs,
    callbackTrustS: settings.callbackTrustS,
  };
}

/**
 * SQL: ms until the next poll of a task that has run `ranMs` (an SQL expression), by `PollPacing`;
 * binds `:minMs`, `:maxMs`, `:callbackFallbackMinMs` and `:callbackTrustS`. Callbacks arrive when one
 * freed a slot lately (`provider_slots.called_back_at`, stamped by `record-task-callback.ts` in the
 * statement that frees the slot: no write of its own).
 */
export function nextPollInMsSql(ranMs: string): string {
  return `case when exists (
      select 1 from provider_slots where called_back_at > now() - :callbackTrustS * interval '1 second'
    )
    then least(:maxMs, greatest(:minMs, :callbackFallbackMinMs, ${ranMs} / 3))
    else least(:maxMs, greatest(:minMs, ${ranMs} / 15)) end`;
}

/**
 * The provider is still working: the next poll comes by `PollPacing` (or `afterMs` from now: the
 * backoff after a poll the provider did not answer, `pool/account-circuits.ts`), and after `minMs` only once
 * the provider called back that the task finished (`task_callback_at`: it came while this poll was
 * under way, after the provider answered "running"); the poll claim ends with it. The generation's
 * slot, when it holds one, is kept for another `leaseS`. Guarded by the status.
 *
 * One statement, whose commit does not wait for the disk (`commit-without-flush.ts`): a schedule
 * lost in a crash of Postgres only brings the poll sooner, and that poll renews the lease again,
 * long before it runs out.
 */
export async function schedulePoll(db: Knex, generationId: string, timing: PollPacing & { leaseS: number; afterMs?: number | null }): Promise<void> {
  await db.raw(
    `with scheduled as (
       update generations
       set next_poll_at = now() + case when :afterMs::float8 is not null then :afterMs::float8
           when task_callback_at is not null then :minMs
           else ${nextPollInMsSql('extract(epoch from now() - started_at) * 1000')} end * interval '1 millisecond',
         claimed_by = null
       from (select ${commitWithoutFlush}) as commit_without_flush
       where id = :generationId and status = 'processing' and result_stored_at is null
       returning id
     )
     update provider_slots set lease_expires_at = now() + :leaseS * interval '1 second'
     where generation_id in (select id from scheduled)`,
    { generationId, ...timing, afterMs: timing.afterMs ?? null },
  );
}
