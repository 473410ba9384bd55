import type { Locale } from './locale';

/**
 * Thematic search (catalog rule 4): effects close to the meaning of a query, added after the
 * matches by words. It is off unless `THEMATIC_SEARCH=1` and a backend is passed to
 * `catalogRoutes({ thematicSearch })`; none is built yet (an embedding index would be one).
 *
 * A backend answers only the effects clearly closer to the query than the rest of the catalog,
 * best first, and picks up a new effect within ten minutes. The search keeps at most
 * `maxThematicEffects` of them that are listed, pass the filters and were not matched by words.
 */
export interface ThematicSearch {
  closestEffects(query: string, locale: Locale): Promise<string[]>;
}

export const maxThematicEffects = 10;

/** A shorter query carries too little meaning: words only. */
export const minThematicQueryLength = 3;
