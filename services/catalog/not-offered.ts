import type { Knex } from 'knex';
import type { Logger } from '../../common/logger';
import { providerKinds, type ProviderKind } from '../../common/model-route';
import type { ModelRoutes } from '../../db/catalog/model';
import { hasRouteFor } from '../../db/catalog/offered';
import { configuredKinds, offeredKinds, routesOf } from '../../pool/model-routes';

type Generations = { providerKindOrder: readonly ProviderKind[]; providerAccounts: readonly { kind: ProviderKind }[] };

/** A catalog row that no provider kind with an account here runs, and why. */
export interface NotOffered {
  what: 'effect' | 'studio category';
  slug: string;
  /** `no account for replicate, fal`, or a kind left out of PROVIDER_KIND_ORDER. */
  reason: string;
}

/** Why no kind of `routes` takes a task here: the kinds without an account, the kinds the order leaves out. */
function reasonOf(routes: ModelRoutes, generations: Generations): string {
  const order = generations.providerKindOrder;
  const kinds = [...order, ...providerKinds.filter((kind) => !order.includes(kind))].filter((kind) => routes[kind]);
  const accounts = configuredKinds(generations.providerAccounts);
  const withoutAccount = kinds.filter((kind) => !accounts.has(kind));
  const leftOut = kinds.filter((kind) => accounts.has(kind) && !order.includes(kind));
  return [
    withoutAccount.length ? `no account for ${withoutAccount.join(', ')}` : null,
    leftOut.length ? `${leftOut.join(', ')} not in PROVIDER_KIND_ORDER` : null,
  ].filter(Boolean).join('; ');
}

/**
 * The effects (not hidden) and enabled studio categories that are not offered in this
 * configuration: not listed, and refused at launch, until an account of one of their kinds is set.
 */
export async function notOffered(db: Knex, generations: Generations): Promise<NotOffered[]> {
  const offered = offeredKinds(generations);
  const read = (table: string, visible: string) => db.raw<{ rows: { slug: string; model: string; runs: ModelRoutes | null }[] }>(
    `select slug, model, runs from ${table} where ${visible} and not ${hasRouteFor(table, offered)} order by slug`,
  );
  const [effects, studio] = await Promise.all([read('effects', 'not hidden'), read('studio_categories', 'enabled')]);
  const rows = (what: NotOffered['what'], found: { rows: { slug: string; model: string; runs: ModelRoutes | null }[] }) =>
    found.rows.map((row) => ({ what, slug: row.slug, reason: reasonOf(routesOf(row.runs, row.model), generations) }));
  return [...rows('effect', effects), ...rows('studio category', studio)];
}

/** Lines of the start log beyond which the rest are counted, not named. */
const namedAtMost = 20;

/** The start log's account of what is not offered and why: `effect winter-portrait: no account for replicate, fal`. */
export async function logNotOffered(db: Knex, generations: Generations, log: Logger): Promise<void> {
  const rows = await notOffered(db, generations);
  for (const row of rows.slice(0, namedAtMost)) log.warn({ [row.what === 'effect' ? 'effect' : 'studioCategory']: row.slug }, `${row.what} ${row.slug}: ${row.reason}`);
  if (rows.length > namedAtMost) log.warn({ notOffered: rows.length }, `${rows.length - namedAtMost} more effects or studio categories are not offered either`);
}
