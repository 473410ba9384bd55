import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import { credit } from '../credits/ledger';
import { effectEarnedPush } from '../push/push-job';
import { enqueue } from '../queues';
import type { EarningRow } from './model';

/**
 * pending -> settled at `settles_at`: the author is credited as one `effect_earned` row (reference:
 * the earning id) and gets a push, all in this transaction. Guarded on `pending` and due: of two
 * schedulers settling the same earning one waits on the row lock and then changes nothing; a
 * reversed earning never settles.
 */
export async function settleEarning(trx: Knex.Transaction, boss: PgBoss, earningId: string): Promise<EarningRow | null> {
  const { rows: [earning] } = await trx.raw<{ rows: EarningRow[] }>(
    `update user_effect_earnings set status = 'settled', settled_at = now()
     where id = :earningId and status = 'pending' and settles_at <= now()
     returning *`,
    { earningId },
  );
  if (!earning) return null;
  await credit(trx, { userId: earning.user_id, kind: 'effect_earned', amount: earning.amount, reference: earning.id });
  await enqueue(boss, trx, 'push-send', effectEarnedPush(earning));
  return earning;
}
