import type { Knex } from 'knex';
import type { Config } from '../../config';
import { errors, type ApiError } from '../http/errors';

/**
 * The submission limits (docs/mobile.md, "The marketplace of user effects") (`POST /v1/user-effects` and publish), read from
 * Postgres in the caller's transaction after it locked the author's row, so that concurrent
 * submissions in any number of web processes are counted one after another:
 * - a series of `lockRejections` rejections within `lockWindowS` locks submissions for `lockS` after
 *   the last of them: `429` with `Retry-After`;
 * - after any rejection, a cooldown of `rejectionCooldownS`: `429` with `Retry-After`;
 * - at most `maxProcessing` waiting for moderation: `429` without `Retry-After` (the wait depends on
 *   the moderation, not on a clock).
 * Null when the submission may go ahead.
 */
export async function submissionRefusal(trx: Knex.Transaction, userId: string, limits: Config['marketplace']): Promise<ApiError | null> {
  await trx('users').where({ id: userId }).forUpdate().first('id');
  const { rows: [state] } = await trx.raw<{ rows: { now: Date; rejections: Date[]; processing: number }[] }>(
    `select now() as now,
       array(select rejected_at from user_effects
             where user_id = :userId and rejected_at > now() - make_interval(secs => :lookBackS)
             order by rejected_at desc) as rejections,
       (select count(*)::integer from user_effects where user_id = :userId and status = 'processing') as processing`,
    { userId, lookBackS: Math.max(limits.lockWindowS + limits.lockS, limits.rejectionCooldownS) },
  );
  const now = state.now.getTime();
  const lockedUntil = lockEnd(state.rejections.map((at) => new Date(at).getTime()), limits);
  if (lockedUntil > now) return errors.rateLimited((lockedUntil - now) / 1000);
  const latest = state.rejections[0] ? new Date(state.rejections[0]).getTime() : null;
  const cooledAt = latest === null ? 0 : latest + limits.rejectionCooldownS * 1000;
  if (cooledAt > now) return errors.rateLimited((cooledAt - now) / 1000);
  if (state.processing >= limits.maxProcessing) return errors.rateLimited();
  return null;
}

/** The end of the latest lock: `lockS` after the last rejection of any series of `lockRejections` within `lockWindowS` (epoch ms, newest first in). */
function lockEnd(rejections: number[], limits: Config['marketplace']): number {
  let end = 0;
  for (let index = 0; index + limits.lockRejections - 1 < rejections.length; index += 1) {
    const last = rejections[index];
    const first = rejections[index + limits.lockRejections - 1];
    if (last - first <= limits.lockWindowS * 1000) end = Math.max(end, last + limits.lockS * 1000);
  }
  return end;
}
