import type { Knex } from 'knex';
import type { ModelRoutes } from '../catalog/model';
import { routeColumns } from '../catalog/route-columns';
import type { UserEffectRow } from './model';

/**
 * The catalog effect of a user effect (docs/mobile.md, "The marketplace of user effects"), kept in step with its status inside the
 * transaction of each move: `approved` is listed in the `community` category with the user as its
 * author; `private` and a `processing` one that was private before are its author's only
 * (`effects.private_to`, never listed, opened or launched by anyone else); `rejected` and
 * `archived` are hidden from everyone. Every one of these changes bumps the catalog version (the
 * triggers on `effects` and `effect_categories`), so every web process drops its cached catalog.
 */

const communityCategorySlug = 'community';

/**
 * The `community` category: seeded enabled and last (after every category there is when it is
 * made); an operator may move or disable it later like any other. Made when first needed, so it
 * exists on a database seeded before the marketplace, too.
 */
export async function communityCategoryId(db: Knex): Promise<string> {
  await db.raw(
    `insert into categories (slug, enabled, position, name_ru, name_en, icon)
     select :slug, true, coalesce(max(position), -1) + 1, 'Сообщество', 'Community', '👥' from categories
     on conflict (slug) do nothing`,
    { slug: communityCategorySlug },
  );
  const row: { id: string } = await db('categories').where({ slug: communityCategorySlug }).first('id');
  return row.id;
}

/** The author behind a user's effects (made on their first approval), named as the user's profile is. */
async function authorIdOf(trx: Knex.Transaction, userId: string): Promise<string> {
  const { rows: [row] } = await trx.raw<{ rows: { id: string }[] }>(
    `insert into authors (user_id, name) select id, name from users where id = :userId
     on conflict (user_id) do update set user_id = excluded.user_id
     returning id`,
    { userId },
  );
  return row.id;
}

/**
 * Makes the catalog effect of a user effect whose first moderation passed, its author's only
 * (`private_to`) or not, and links the user effect to it. Its slug is fixed by the user effect's id;
 * it runs on the marketplace's routes for its output type (`runs`, USER_EFFECT_*_RUNS).
 */
export async function createCatalogEffect(trx: Knex.Transaction, row: UserEffectRow, privateTo: string | null, runs: ModelRoutes): Promise<string> {
  const authorId = await authorIdOf(trx, row.user_id);
  const { rows: [effect] } = await trx.raw<{ rows: { id: string }[] }>(
    `insert into effects (slug, name_ru, name_en, description_ru, description_en, cost, characters, output_type, model, runs,
       author_id, position, poster_key, preview, private_to)
     values (:slug, :name, :name, :description, :description, :cost, :characters, :outputType, :model, :runs::jsonb,
       :authorId, :position, :posterKey, :preview::jsonb, :privateTo)
     returning id`,
    {
      slug: `community-${row.id}`,
      name: row.name,
      description: row.description,
      cost: row.cost,
      characters: JSON.stringify(row.characters),
      outputType: row.output_type,
      ...routeColumns({ runs }),
      authorId,
      // After the operator's curated effects in the flat list.
      position: communityPosition,
      posterKey: row.poster_key,
      preview: JSON.stringify(row.preview),
      privateTo,
    },
  );
  await trx('user_effects').where({ id: row.id }).update({ effect_id: effect.id });
  return effect.id;
}

/** Curated position of community effects in the flat list: after the operator's own. */
const communityPosition = 1_000_000;

/** Shows the effect to everyone, listed in `community` (a new arrival there: it competes for the new-effect slots). */
export async function publishCatalogEffect(trx: Knex.Transaction, effectId: string): Promise<void> {
  await trx('effects').where({ id: effectId }).update({ private_to: null, hidden: false, updated_at: trx.fn.now() });
  const categoryId = await communityCategoryId(trx);
  await trx.raw(
    `insert into effect_categories (effect_id, category_id, position, new_since) values (:effectId, :categoryId, 0, now())
     on conflict (effect_id, category_id) do nothing`,
    { effectId, categoryId },
  );
}

/** Its author's only: unlisted, and neither opened nor launched by anyone else. */
export async function makeCatalogEffectPrivate(trx: Knex.Transaction, effectId: string, userId: string): Promise<void> {
  await trx('effect_categories').where({ effect_id: effectId }).delete();
  await trx('effects').where({ id: effectId }).update({ private_to: userId, updated_at: trx.fn.now() });
}

/** Gone for everyone (rejected after a publish, archived): hidden and unlisted; generations made with it still show it. */
export async function hideCatalogEffect(trx: Knex.Transaction, effectId: string): Promise<void> {
  await trx('effect_categories').where({ effect_id: effectId }).delete();
  await trx('effects').where({ id: effectId }).update({ hidden: true, updated_at: trx.fn.now() });
}
