import type { Freshness } from './catalog-cache';

/**
 * Where values computed from the catalog are kept between requests (the catalog cache, dropped
 * when the catalog changes): the ordered id lists of the flat list and the categories, each
 * locale's search index, each search word's forms, each effect's view. Without one, each request
 * computes what it needs.
 */
export interface CatalogStore {
  /**
   * `within`: the freshness of what is made from the value, limited to the value's. `untilChanged`:
   * the value depends on nothing time or popularity changes (a view, the search index, a word's
   * forms), so only a catalog change drops it, not `CATALOG_CACHE_TTL_S`.
   */
  remember<T>(key: string, bytes: (value: T) => number, compute: (freshness: Freshness) => Promise<T>, within?: Freshness, options?: { untilChanged?: boolean }): Promise<T>;
  /** The value of `key` while it is kept and fresh (as `remember` would give it), else undefined; never computes. */
  peek<T>(key: string, within?: Freshness): T | undefined;
}

export const computeEveryTime: CatalogStore = {
  remember: (_key, _bytes, compute) => compute({ until: Number.POSITIVE_INFINITY, limitTo() {} }),
  peek: () => undefined,
};

/**
 * The values of many keys at once, each kept on its own: the ones `store` lacks are computed
 * together, in one call of `computeMissing` (a missing item of its answer is remembered as null).
 * Every miss of one call registers before the computation starts: a store asks for a missing value
 * at once, in the same turn of the event loop. The kept ones are read first, without a promise each
 * (a page reads twenty views).
 */
export async function rememberEach<Item, T>(
  store: CatalogStore,
  items: Item[],
  entry: { key: (item: Item) => string; bytes: (value: T | null) => number; untilChanged?: boolean },
  computeMissing: (missing: Item[]) => Promise<Map<Item, T>>,
  within?: Freshness,
): Promise<(T | null)[]> {
  const kept = items.map((item) => store.peek<T | null>(entry.key(item), within));
  if (!kept.includes(undefined)) return kept as (T | null)[];
  const missing: Item[] = [];
  let computed: Promise<Map<Item, T>> | null = null;
  return Promise.all(items.map((item, at) => kept[at] !== undefined ? kept[at] : store.remember<T | null>(entry.key(item), entry.bytes, async () => {
    missing.push(item);
    computed ??= Promise.resolve().then(() => computeMissing(missing));
    return (await computed).get(item) ?? null;
  }, within, { untilChanged: entry.untilChanged })));
}
