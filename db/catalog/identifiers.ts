import { isUuid } from '../../common/validation';

/** `where` for a path segment or filter that is an effect's or category's id or its slug. */
export function byIdOrSlug(idOrSlug: string): { id: string } | { slug: string } {
  return isUuid(idOrSlug) ? { id: idOrSlug.toLowerCase() } : { slug: idOrSlug };
}
