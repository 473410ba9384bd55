import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import { effectRemovedPush } from '../push/push-job';
import { enqueue } from '../queues';
import { archiveUserEffect } from './archive-user-effect';
import type { UserEffectRow } from './model';
import { reversePendingEarnings } from './reverse-pending-earnings';

/** The longest reason an operator may give for a removal. */
export const removalReasonMaxLength = 1000;

/**
 * An operator's reason for a removal as it is kept (trimmed), or what is wrong with it: one rule for
 * `npm run user-effects -- archive` and the console's Archive form. Required; U+0000 cannot be kept
 * in Postgres text.
 */
export function removalReason(given: string): { reason: string } | { problem: 'blank' | 'too_long' | 'nul' } {
  const reason = given.trim();
  if (!reason) return { problem: 'blank' };
  if (reason.length > removalReasonMaxLength) return { problem: 'too_long' };
  if (reason.includes('\u0000')) return { problem: 'nul' };
  return { reason };
}

export type OperatorRemoval =
  | { outcome: 'archived'; userEffect: UserEffectRow; reversedEarnings: number }
  | { outcome: 'not_found' }
  | { outcome: 'already_archived' };

/**
 * An operator removes a user effect (docs/mobile.md, "The marketplace of user effects"; `npm run user-effects -- archive`, and the
 * operator console's Archive form): archived with the reason, its catalog effect hidden, its pending
 * earnings reversed and the author told by push, all in one transaction. The author's own removal
 * (`DELETE /v1/user-effects/{id}`) sends no push and reverses nothing.
 */
export async function removeByOperator(db: Knex, boss: PgBoss, removal: { userEffectId: string; reason: string }): Promise<OperatorRemoval> {
  return db.transaction(async (trx) => {
    const archived = await archiveUserEffect(trx, { userEffectId: removal.userEffectId, userId: null, by: 'operator', reason: removal.reason });
    if (!archived) {
      const exists = await trx('user_effects').where({ id: removal.userEffectId }).first('id');
      return { outcome: exists ? 'already_archived' : 'not_found' };
    }
    const reversedEarnings = await reversePendingEarnings(trx, archived.id);
    await enqueue(boss, trx, 'push-send', effectRemovedPush(archived));
    return { outcome: 'archived', userEffect: archived, reversedEarnings };
  });
}
