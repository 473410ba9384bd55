import type { Knex } from 'knex';
import type { ProviderKind } from '../../common/model-route';
import { offeredKinds } from '../../pool/model-routes';
import { errors } from '../http/errors';
import { page, pageSchema, pagingProperties, type Page, type Paging } from '../http/paging';
import { defineRoute } from '../http/route';
import { schema, isUuid } from '../../common/validation';
import { notModified, sendCatalogAnswer } from './catalog-cache';
import { availableEffect, curatedOrder } from './catalog-order';
import { effectSchema, loadEffects, publicUrlOf, type Effect, type PublicUrl } from './effect-view';
import { localeProperty, type Locale } from './locale';

export interface AuthorProfile {
  id: string;
  name: string | null;
  avatar_url: string | null;
  effects: Page<Effect>;
}

/**
 * An author's public page: only what they published (listed effects, in curated order); never
 * email, earnings, submissions or complaints. Null when the author does not exist, is disabled or
 * deleted, or has no published effect.
 */
async function authorProfile(db: Knex, url: PublicUrl, authorId: string, locale: Locale, paging: Paging, offered: readonly ProviderKind[]): Promise<AuthorProfile | null> {
  if (!isUuid(authorId)) return null;
  const author = await db('authors').where({ id: authorId, disabled: false }).whereNull('deleted_at').first('id', 'name', 'avatar_key');
  if (!author) return null;
  const published = `from effects e where e.author_id = :authorId and ${availableEffect('e', offered)}`;
  const { rows } = await db.raw<{ rows: { total: number; ids: string[] }[] }>(
    `select (select count(*) ${published}) as total,
       array(select e.id ${published} order by ${curatedOrder('e')} limit :limit offset :offset) as ids`,
    { authorId: author.id, ...paging },
  );
  const { total, ids } = rows[0];
  if (!total) return null;
  return {
    id: author.id,
    name: author.name?.trim() || null,
    avatar_url: author.avatar_key && url(author.avatar_key),
    effects: page(await loadEffects(db, url, ids, locale), total, paging),
  };
}

/**
 * Counts one view of a community effect's author per viewer per day; the author's own views do
 * not count. Repeats the same day change nothing (the primary key).
 */
export async function countAuthorView(db: Knex, effectId: string, viewerId: string): Promise<void> {
  await db.raw(
    `insert into author_views (author_id, viewer_id, day)
     select a.id, :viewerId, (now() at time zone 'utc')::date
     from effects e join authors a on a.id = e.author_id
     where e.id = :effectId and a.user_id is distinct from :viewerId::uuid
     on conflict do nothing`,
    { effectId, viewerId },
  );
}

export const authorRoutes = [
  defineRoute<unknown, { locale: Locale } & Paging, { author_id: string }>({
    method: 'GET', path: '/v1/authors/{author_id}', access: 'public',
    summary: "An author's public profile with the effects they published.",
    query: schema.object({ locale: localeProperty, ...pagingProperties }),
    responses: {
      200: {
        description: 'Author profile',
        schema: schema.response({
          id: schema.uuid(),
          name: schema.nullable(schema.string()),
          avatar_url: schema.nullable(schema.string()),
          effects: pageSchema(effectSchema, 'EffectPage'),
        }, { title: 'AuthorProfile' }),
      },
      ...notModified,
    },
    errors: { not_found: 'The author does not exist, is disabled, or has published no effect.' },
    handler: async (ctx, { params, query }) => {
      const { db, storage, config } = ctx.services;
      const answer = await ctx.catalogCache.answer(
        ['author', params.author_id, query.locale, query.limit, query.offset].join('\u0000'),
        () => authorProfile(db, publicUrlOf(storage), params.author_id, query.locale, { limit: query.limit, offset: query.offset }, offeredKinds(config.generations)),
      );
      if (!answer) throw errors.notFound('Author not found.');
      sendCatalogAnswer(ctx, answer);
    },
  }),
];
