import type { Knex } from 'knex';
import type { ProviderKind } from '../../common/model-route';
import { offeredKinds } from '../../pool/model-routes';
import { defineRoute, type Route } from '../http/route';
import { notModified, sendCatalogAnswer } from './catalog-cache';
import { schema, type JsonSchema } from '../../common/validation';

/** The catalog's languages (the contract): `ru` by default, also `en`; anything else is `422`. */
export const locales = ['ru', 'en'] as const;
export type Locale = (typeof locales)[number];

export const localeProperty = { ...schema.string({ enum: [...locales] }), default: 'ru' };


/** The Postgres text search configuration whose stemmer knows the locale's word forms. */
export const searchConfigOf: Record<Locale, string> = { ru: 'russian', en: 'english' };

/** `GET` of a whole localized list (the categories, the tags): public, `?locale=ru|en`, every item, cached. */
export function localizedListRoute<Item>(
  path: string,
  summary: string,
  description: string,
  item: JsonSchema,
  list: (db: Knex, locale: Locale, offered: readonly ProviderKind[]) => Promise<Item[]>,
): Route {
  return defineRoute<unknown, { locale: Locale }>({
    method: 'GET', path, access: 'public',
    summary,
    query: schema.object({ locale: localeProperty }),
    responses: { 200: { description, schema: schema.array(item) }, ...notModified },
    handler: async (ctx, { query }) => {
      const answer = await ctx.catalogCache.answer(`${path}\u0000${query.locale}`, () => list(ctx.services.db, query.locale, offeredKinds(ctx.services.config.generations)));
      sendCatalogAnswer(ctx, answer!);
    },
  });
}
