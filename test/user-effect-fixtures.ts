import { randomUUID } from 'node:crypto';
import { approveUserEffect } from '../db/user-effects/approve-user-effect';
import { archiveUserEffect } from '../db/user-effects/archive-user-effect';
import { keepPrivate } from '../db/user-effects/keep-private';
import type { UserEffectRow, UserEffectStatus } from '../db/user-effects/model';
import { recordPreview } from '../db/user-effects/record-preview';
import { rejectUserEffect } from '../db/user-effects/reject-user-effect';
import { HttpProviderAdapter } from '../clients/providers/http-client';
import { ProviderAdapters } from '../clients/providers/registry';
import { AccountKeys } from '../pool/accounts';
import type { RunningPart } from '../services';
import { startModeration } from '../workers/user-effects/moderation';
import { startSamplePreviews } from '../workers/user-effects/sample-preview';
import { insertGeneration, photo, startPipeline, storedUpload, type Pipeline } from './generation-fixtures';
import { services } from './harness';
import { eventually } from '../scripts/wait';

/** A submission body with a fresh sample photo of `userId`'s; `fields` on top. */
export async function submission(userId: string, fields: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  return { name: 'Neon portrait', description: 'Glowing city lights', prompt: 'a neon portrait at night', output_type: 'image', sample_upload_id: await storedUpload(userId, await photo(96, 64)), ...fields };
}

/**
 * A user effect of `userId` in `status`, made through the guarded moves the media role makes (a
 * verdict, a preview, then the move), without the provider: for tests of the API and the moves.
 */
export async function userEffectIn(userId: string, status: UserEffectStatus, fields: { visibility?: 'public' | 'private'; output_type?: 'image' | 'video'; rejectedAt?: Date } = {}): Promise<UserEffectRow> {
  const { db } = services();
  const visibility = fields.visibility ?? (status === 'private' ? 'private' : 'public');
  const outputType = fields.output_type ?? 'image';
  const [row] = await db('user_effects').insert({
    id: randomUUID(), user_id: userId, status: 'processing', visibility, name: `Effect ${status}`, prompt: 'a prompt', output_type: outputType,
    characters: JSON.stringify([{ min_photos: 1, max_photos: 1 }]), cost: outputType === 'image' ? 10 : 40, sample_key: `uploads/${userId}/sample.jpg`,
  }).returning('*');
  if (status === 'processing') return row;
  const target = { userEffectId: row.id, round: 1 };
  await db.transaction(async (trx) => {
    const verdict = status === 'rejected' ? { verdict: 'rejected', verdict_reason: 'content_policy' } : { verdict: 'approved' };
    await trx('user_effects').where({ id: row.id }).update(verdict);
    const preview = { thumb: `user-effects/${row.id}/t.webp`, card: `user-effects/${row.id}/c.webp`, full: `user-effects/${row.id}/f.webp`, animation: null, video: null, width: 96, height: 64, blurhash: null };
    await recordPreview(trx, { ...target, posterKey: `user-effects/${row.id}/poster.jpg`, preview });
    if (status === 'rejected') await rejectUserEffect(trx, target);
    else if (status === 'private') await keepPrivate(trx, target, services().config.marketplace.userEffectRuns);
    else await approveUserEffect(trx, target, services().config.marketplace.userEffectRuns);
    if (status === 'archived') await archiveUserEffect(trx, { userEffectId: row.id, userId, by: 'author', reason: null });
  });
  if (fields.rejectedAt) await db('user_effects').where({ id: row.id }).update({ rejected_at: fields.rejectedAt });
  return db('user_effects').where({ id: row.id }).first();
}

/** An earning of an approved user effect of `authorId`, for a generation of another user; `settlesInS` from now (negative: due). */
export async function earningOf(authorId: string, options: { amount?: number; settlesInS?: number; userEffectId?: string } = {}): Promise<{ earningId: string; userEffectId: string }> {
  const { db } = services();
  const userEffect = options.userEffectId ? await db('user_effects').where({ id: options.userEffectId }).first() : await userEffectIn(authorId, 'approved');
  const [buyer] = await db('users').insert({ is_anonymous: false }).returning('id');
  const generationId = await insertGeneration(buyer.id, 'succeeded');
  const [earning] = await db('user_effect_earnings').insert({
    user_effect_id: userEffect.id, effect_id: userEffect.effect_id, generation_id: generationId, user_id: authorId,
    amount: options.amount ?? 2, status: 'pending', settles_at: db.raw("now() + make_interval(secs => ?)", [options.settlesInS ?? -1]),
  }).returning('id');
  return { earningId: earning.id, userEffectId: userEffect.id };
}

/** The generation pipeline with the marketplace's parts: moderation on the worker side, sample previews on the media side. */
export async function startMarketplacePipeline(options: Parameters<typeof startPipeline>[0] = {}): Promise<Pipeline> {
  const pipeline = await startPipeline(options);
  const { config, db } = pipeline.services;
  const parts: RunningPart[] = [
    await startModeration(pipeline.services, {
      adapters: new ProviderAdapters({ simulator: new HttpProviderAdapter({ baseUrl: pipeline.simulator.url }) }),
      keys: new AccountKeys(db, config.generations.providerAccounts),
    }),
    await startSamplePreviews(pipeline.services),
  ];
  return {
    ...pipeline,
    stop: async () => {
      for (const part of parts.reverse()) await part.stop();
      await pipeline.stop();
    },
  };
}

export async function waitForStatus(userEffectId: string, status: UserEffectStatus, timeoutMs = 20_000): Promise<UserEffectRow> {
  return eventually(() => services().db('user_effects').where({ id: userEffectId }).first(), (row: UserEffectRow) => row?.status === status, timeoutMs);
}
