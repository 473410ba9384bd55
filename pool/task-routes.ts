import type { Config } from '../config';
import type { ModelRoutes } from '../db/catalog/model';
import { chooseRoute, configuredKinds, routesOf, type ChosenRoute } from './model-routes';

/**
 * The route a new task takes in this deployment: the first kind of PROVIDER_KIND_ORDER that the
 * effect (or studio category) names a route for and that has an account. Null when none has: the
 * effect is not offered, and creating a generation of it is refused as for a hidden one.
 */
export function generationRoute(config: Config, offered: { runs: ModelRoutes | null; model: string }): ChosenRoute | null {
  return chooseRoute(routesOf(offered.runs, offered.model), config.generations.providerKindOrder, configuredKinds(config.generations.providerAccounts));
}

/** The routes of the marketplace's moderation model: the simulator's `moderation` until the catalog names others. */
const moderationRoutes: ModelRoutes = { simulator: { model: 'moderation' } };

/** The route a user effect's moderation round takes here; null when no kind with an account runs moderation. */
export function moderationRoute(config: Config): ChosenRoute | null {
  return chooseRoute(moderationRoutes, config.generations.providerKindOrder, configuredKinds(config.generations.providerAccounts));
}
