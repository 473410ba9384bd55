import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import { enqueue } from '../queues';
import { announceUserEffect } from './announce-user-effect';
import type { UserEffectRow } from './model';

export type NewUserEffect = Pick<UserEffectRow,
  'id' | 'user_id' | 'visibility' | 'name' | 'description' | 'prompt' | 'output_type' | 'characters' | 'cost' | 'sample_key'>;

/**
 * none -> processing, inside the transaction that checked the submission limits: the row, its
 * first moderation job and the announcement commit together or not at all.
 */
export async function insertProcessing(trx: Knex.Transaction, boss: PgBoss, effect: NewUserEffect): Promise<UserEffectRow> {
  const { rows: [row] } = await trx.raw<{ rows: UserEffectRow[] }>(
    `insert into user_effects (id, user_id, status, visibility, name, description, prompt, output_type, characters, cost, sample_key)
     values (:id, :user_id, 'processing', :visibility, :name, :description, :prompt, :output_type, :characters, :cost, :sample_key)
     returning *`,
    { ...effect, characters: JSON.stringify(effect.characters) },
  );
  await enqueue(boss, trx, 'user-effect-moderation', { userEffectId: row.id, round: row.moderation_round });
  await announceUserEffect(trx, row);
  return row;
}
