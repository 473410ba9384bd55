import type { ModelRoute, ProviderKind } from '../common/model-route';
import type { ModelRoutes } from '../db/catalog/model';

/**
 * Which provider runs a task, and how. An effect (or studio category, or the marketplace's
 * moderation) names a route per provider kind (`runs`); a task goes to the first kind of the
 * operator's order (`PROVIDER_KIND_ORDER`) that it names and that has an account here. Before any
 * route was named, `runs` is null and `model` is the simulator's model: the embedded default.
 */
export interface ChosenRoute {
  kind: ProviderKind;
  route: ModelRoute;
}

/** The kinds that have at least one configured account in this process's configuration. */
export function configuredKinds(accounts: readonly { kind: ProviderKind }[]): ReadonlySet<ProviderKind> {
  return new Set(accounts.map((account) => account.kind));
}

/** The routes of `runs`, or the simulator's route of `model` when none were named. */
export function routesOf(runs: ModelRoutes | null, model: string): ModelRoutes {
  return runs ?? { simulator: { model } };
}

/** The route a new task takes, or null when no kind it names has an account (the effect is not offered). */
export function chooseRoute(
  routes: ModelRoutes,
  order: readonly ProviderKind[],
  available: ReadonlySet<ProviderKind>,
): ChosenRoute | null {
  for (const kind of order) {
    const route = routes[kind];
    if (route && available.has(kind)) return { kind, route };
  }
  return null;
}

/**
 * The kinds a new task may go to in this configuration: those of the order that have an account, in
 * its order. An effect is offered when it names a route for one of them (`hasRouteFor` in SQL, the
 * same answer as `chooseRoute` not being null); every process reads the same configuration, so the
 * answer is the same for every caller.
 */
export function offeredKinds(generations: { providerKindOrder: readonly ProviderKind[]; providerAccounts: readonly { kind: ProviderKind }[] }): ProviderKind[] {
  const available = configuredKinds(generations.providerAccounts);
  return generations.providerKindOrder.filter((kind) => available.has(kind));
}
