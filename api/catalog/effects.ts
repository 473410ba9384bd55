import type { Knex } from 'knex';
import type { ProviderKind } from '../../common/model-route';
import { offeredKinds } from '../../pool/model-routes';
import { errors } from '../http/errors';
import { pageBytes, pageSchema, pagingProperties, type Paging } from '../http/paging';
import { defineRoute } from '../http/route';
import { schema } from '../../common/validation';
import { countAuthorView } from './authors';
import { effectBytes, effectExample, effectSchema, loadEffects, publicUrlOf, type Effect, type PublicUrl } from './effect-view';
import { listEffects } from './effect-list';
import { byIdOrSlug } from '../../db/catalog/identifiers';
import { hasRouteFor } from '../../db/catalog/offered';
import { notModified, sendCatalogAnswer } from './catalog-cache';
import { parseSearch, type SearchQuery } from './search-words';
import { localeProperty, type Locale } from './locale';
import type { ThematicSearch } from './thematic-search';

/**
 * Catalog rule 1: an effect opens by id or slug even when no enabled category lists it; a hidden one
 * does not, nor one that no provider kind with an account here runs (`offered`). `privateTo` null
 * opens the effects everyone may see; a user id opens only that user's private ones (a user effect
 * that is `private`, or `processing` again after a publish).
 */
async function openEffect(db: Knex, url: PublicUrl, idOrSlug: string, locale: Locale, offered: readonly ProviderKind[], privateTo: string | null = null): Promise<Effect | null> {
  const row = await db('effects').where(byIdOrSlug(idOrSlug)).andWhere({ hidden: false })
    .andWhereRaw('private_to is not distinct from ?::uuid', [privateTo]).andWhereRaw(hasRouteFor('effects', offered)).first('id');
  if (!row) return null;
  const [effect] = await loadEffects(db, url, [row.id], locale);
  return effect ?? null;
}

type ListQuery = { locale: Locale; category?: string; tag?: string; search?: string } & Paging;

/**
 * One cache key per different answer: a search by its significant words in any order (rule 4 ranks
 * by how many words match and where, not by their order), except with thematic search, which reads
 * the string as typed.
 */
function listKey(query: ListQuery, search: SearchQuery, thematic: boolean): string {
  const words = search.kind === 'words'
    ? (thematic ? query.search!.trim() : [...search.words].sort().join(' '))
    : search.kind;
  return ['effects', query.locale, query.category ?? '', query.tag ?? '', words, query.limit, query.offset].join('\u0000');
}

export function effectRoutes(options: { thematicSearch?: ThematicSearch }) {
  return [
    defineRoute<unknown, ListQuery>({
      method: 'GET', path: '/v1/effects', access: 'public',
      summary: 'Listed effects: the curated flat list, one category in its server order, or search results.',
      query: schema.object({
        locale: localeProperty,
        category: schema.string({ maxLength: 64 }),
        tag: schema.string({ maxLength: 64 }),
        search: schema.string({ maxLength: 300 }),
        ...pagingProperties,
      }),
      responses: { 200: { description: 'Page of effects', schema: pageSchema(effectSchema, 'EffectPage'), example: { items: [effectExample], total: 1, limit: 20, offset: 0 } }, ...notModified },
      handler: async (ctx, { query }) => {
        const { db, storage, config } = ctx.services;
        const thematic = config.catalog.thematicSearch ? options.thematicSearch : null;
        const cache = ctx.catalogCache;
        const search = parseSearch(query.search);
        const answer = await cache.answer(listKey(query, search, Boolean(thematic)), (freshness) => listEffects(db, publicUrlOf(storage), {
          locale: query.locale,
          category: query.category,
          tag: query.tag,
          search: query.search,
          paging: { limit: query.limit, offset: query.offset },
          newEffects: { slots: config.catalog.newEffectSlots, days: config.catalog.newEffectDays },
          thematic,
          offered: offeredKinds(config.generations),
        }, cache, freshness), { keepWhenAskedAgain: search.kind === 'words', body: (effects) => pageBytes(effects, effectBytes) });
        sendCatalogAnswer(ctx, answer!);
      },
    }),
    defineRoute<unknown, { locale: Locale }, { id_or_slug: string }>({
      method: 'GET', path: '/v1/effects/{id_or_slug}', access: 'public',
      summary: 'One effect by id or slug; with a valid token, a community effect counts a daily view for its author.',
      query: schema.object({ locale: localeProperty }),
      responses: { 200: { description: 'Effect', schema: effectSchema, example: effectExample }, ...notModified },
      errors: { not_found: 'No effect has this id or slug.' },
      handler: async (ctx, { params, query, user }) => {
        const { db, storage, config } = ctx.services;
        const offered = offeredKinds(config.generations);
        const answer = await ctx.catalogCache.answer(`effect\u0000${query.locale}\u0000${params.id_or_slug}`,
          () => openEffect(db, publicUrlOf(storage), params.id_or_slug, query.locale, offered));
        if (answer) {
          // `public` access leaves `user` null for a missing, expired or broken token: no view then.
          if (user && answer.value.author_id) await countAuthorView(db, answer.value.id, user.id);
          return sendCatalogAnswer(ctx, answer);
        }
        // The caller's own private effect is layered on top of what everyone sees, never cached.
        const own = user ? await openEffect(db, publicUrlOf(storage), params.id_or_slug, query.locale, offered, user.id) : null;
        if (!own) throw errors.notFound('Effect not found.');
        ctx.set('Cache-Control', 'private, no-cache');
        ctx.body = own;
      },
    }),
  ];
}
