const uuidShape = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Ids are UUIDs; anything else in their place can only be a slug (or nothing), never a 422. */
export function isUuid(text: string): boolean {
  return uuidShape.test(text);
}

/** `where` for a path segment or filter that is an effect's or category's id or its slug. */
export function byIdOrSlug(idOrSlug: string): { id: string } | { slug: string } {
  return isUuid(idOrSlug) ? { id: idOrSlug.toLowerCase() } : { slug: idOrSlug };
}
