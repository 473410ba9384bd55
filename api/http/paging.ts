import type { Knex } from 'knex';
import type { JsonSchema } from '../../common/validation';

/** Paging bounds of the contract: `limit` 1..100 (default 20), `offset` 0..10000 (default 0). */
const maxOffset = 10_000;

export const pagingProperties: Record<string, JsonSchema> = {
  limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
  offset: { type: 'integer', minimum: 0, maximum: maxOffset, default: 0 },
};

export interface Paging {
  limit: number;
  offset: number;
}

export interface Page<T> {
  items: T[];
  total: number;
  limit: number;
  offset: number;
}

export function page<T>(items: T[], total: number, paging: Paging): Page<T> {
  return { items, total, limit: paging.limit, offset: paging.offset };
}

/**
 * One page of a user's own rows of `table`, newest first (`created_at`, then `id`), with their total:
 * the author's lists of the marketplace (user effects, earnings).
 */
export async function ownRowsNewestFirst<Row>(db: Knex, table: string, userId: string, paging: Paging): Promise<{ rows: Row[]; total: number }> {
  const [found, [{ total }]] = await Promise.all([
    db(table).where({ user_id: userId }).orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).limit(paging.limit).offset(paging.offset),
    db(table).where({ user_id: userId }).count<{ total: number }[]>('* as total'),
  ]);
  return { rows: found as Row[], total: Number(total) };
}

const pageStart = Buffer.from('{"items":[');
const itemSeparator = Buffer.from(',');

/**
 * The bytes of a page, its items' bytes given (kept per item, so a new page of known items is mostly
 * copies): those of `JSON.stringify(page)`.
 */
export function pageBytes<T>(answer: Page<T>, itemBytes: (item: T) => Buffer): Buffer {
  const parts: Buffer[] = [pageStart];
  answer.items.forEach((item, at) => {
    if (at > 0) parts.push(itemSeparator);
    parts.push(itemBytes(item));
  });
  parts.push(Buffer.from(`],"total":${answer.total},"limit":${answer.limit},"offset":${answer.offset}}`));
  return Buffer.concat(parts);
}

/** A page of `item`s; `title` names it in `/v1/openapi.json` (e.g. `EffectPage`). */
export function pageSchema(item: JsonSchema, title?: string): JsonSchema {
  return {
    ...(title ? { title } : {}),
    type: 'object',
    properties: { items: { type: 'array', items: item }, total: { type: 'integer' }, limit: { type: 'integer' }, offset: { type: 'integer' } },
    required: ['items', 'total', 'limit', 'offset'],
  };
}
