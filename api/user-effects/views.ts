import type { Knex } from 'knex';
import type { EarningRow, UserEffectRow } from '../../db/user-effects/model';
import { userEffectStatuses } from '../../db/user-effects/model';
import { characterSchema, effectPreviewSchema, previewView, type EffectPreviewView, type PublicUrl } from '../catalog/effect-view';
import { isUuid, schema } from '../../common/validation';

/** The UserEffect (docs/mobile.md, "The marketplace of user effects"). */
export interface UserEffect {
  id: string;
  status: UserEffectRow['status'];
  visibility: UserEffectRow['visibility'];
  effect_id: string | null;
  name: string;
  description: string;
  prompt: string;
  output_type: 'image' | 'video';
  characters: UserEffectRow['characters'];
  cost: number;
  preview: EffectPreviewView | null;
  rejection_reason: UserEffectRow['rejection_reason'];
  created_at: string;
  updated_at: string;
}

export const userEffectSchema = schema.response({
  id: schema.uuid(),
  status: schema.string({ enum: userEffectStatuses }),
  visibility: schema.string({ enum: ['public', 'private'] }),
  effect_id: schema.nullable(schema.uuid()),
  name: schema.string(),
  description: schema.string(),
  prompt: schema.string(),
  output_type: schema.string({ enum: ['image', 'video'] }),
  characters: schema.array(characterSchema),
  cost: schema.integer(),
  preview: schema.nullable(effectPreviewSchema),
  rejection_reason: schema.nullable(schema.string({ enum: ['content_policy', 'bad_sample'] })),
  created_at: schema.string({ format: 'date-time' }),
  updated_at: schema.string({ format: 'date-time' }),
}, { title: 'UserEffect' });

const noFocus = { focus: null, video_focus: null };

export function userEffectView(row: UserEffectRow, url: PublicUrl): UserEffect {
  return {
    id: row.id,
    status: row.status,
    visibility: row.visibility,
    effect_id: row.effect_id,
    name: row.name,
    description: row.description,
    prompt: row.prompt,
    output_type: row.output_type,
    characters: row.characters,
    cost: row.cost,
    preview: row.preview && previewView(row.preview, noFocus, url),
    rejection_reason: row.rejection_reason,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** The caller's user effect, or null when absent, another's, or the id names none (all `404`). */
export async function findOwnUserEffect(db: Knex, userId: string, id: string): Promise<UserEffectRow | null> {
  if (!isUuid(id)) return null;
  const row: UserEffectRow | undefined = await db('user_effects').where({ id: id.toLowerCase(), user_id: userId }).first();
  return row ?? null;
}

export const earningSchema = schema.response({
  id: schema.uuid(),
  user_effect_id: schema.uuid(),
  effect_id: schema.uuid(),
  generation_id: schema.uuid(),
  amount: schema.integer(),
  status: schema.string({ enum: ['pending', 'settled', 'reversed'] }),
  settles_at: schema.string({ format: 'date-time' }),
  created_at: schema.string({ format: 'date-time' }),
}, { title: 'Earning' });

export function earningView(row: EarningRow) {
  return {
    id: row.id,
    user_effect_id: row.user_effect_id,
    effect_id: row.effect_id,
    generation_id: row.generation_id,
    amount: row.amount,
    status: row.status,
    settles_at: row.settles_at.toISOString(),
    created_at: row.created_at.toISOString(),
  };
}

export const accountSchema = schema.response({
  effects_total: schema.integer(),
  approved: schema.integer(),
  earned_total: schema.integer(),
  pending: schema.integer(),
  next_settles_at: schema.nullable(schema.string({ format: 'date-time' })),
}, { title: 'AuthorAccount' });

/**
 * `GET /v1/user-effects/account` (no `available`, contract A 2026-09-07): how many user effects the
 * author has (archived ones included) and how many are approved, the sum of settled earnings, the
 * sum of pending ones and when the next one settles.
 */
export async function authorAccount(db: Knex, userId: string) {
  const { rows: [row] } = await db.raw<{ rows: { effects_total: number; approved: number; earned_total: number; pending: number; next_settles_at: Date | null }[] }>(
    `select
       (select count(*)::integer from user_effects where user_id = :userId) as effects_total,
       (select count(*)::integer from user_effects where user_id = :userId and status = 'approved') as approved,
       coalesce((select sum(amount)::integer from user_effect_earnings where user_id = :userId and status = 'settled'), 0) as earned_total,
       coalesce((select sum(amount)::integer from user_effect_earnings where user_id = :userId and status = 'pending'), 0) as pending,
       (select min(settles_at) from user_effect_earnings where user_id = :userId and status = 'pending') as next_settles_at`,
    { userId },
  );
  return { ...row, next_settles_at: row.next_settles_at?.toISOString() ?? null };
}
