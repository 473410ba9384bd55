import type { Knex } from 'knex';
import { notify } from '../channels';
import type { UserEffectRow } from './model';

/** Every status change of a user effect is announced in its transaction (`user_effect_status`, the streams). */
export async function announceUserEffect(trx: Knex.Transaction, row: Pick<UserEffectRow, 'id' | 'user_id' | 'status' | 'effect_id'>): Promise<void> {
  await notify(trx, 'user_effect_status', { id: row.id, user_id: row.user_id, status: row.status, effect_id: row.effect_id });
}

/** The server's price of a generation with a user effect (docs/mobile.md, "The marketplace of user effects"). */
