import type { Knex } from 'knex';

/**
 * No effect and no category yet: the demo catalog's seeding goes only into such a catalog. A module
 * of its own so that a role's start can ask before loading the seeding code (`infrastructure.ts`).
 */
export async function catalogIsEmpty(db: Knex): Promise<boolean> {
  return !((await db('effects').first('id')) ?? (await db('categories').first('id')));
}
