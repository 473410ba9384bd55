import type { Freshness } from './catalog-cache';

/**
 * Where values computed from the catalog are kept between requests (the catalog cache, dropped
 * when the catalog changes): the ordered id lists of the flat list and the categories, each search
 * word's forms. Without one, each request computes what it needs.
 */
export interface CatalogStore {
  /** `within`: the freshness of what is made from the value, limited to the value's. */
  remember<T>(key: string, bytes: (value: T) => number, compute: (freshness: Freshness) => Promise<T>, within?: Freshness): Promise<T>;
}

export const computeEveryTime: CatalogStore = {
  remember: (_key, _bytes, compute) => compute({ until: Number.POSITIVE_INFINITY, limitTo() {} }),
};
