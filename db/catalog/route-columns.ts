import { providerKinds } from '../../common/model-route';
import type { ModelRoutes } from './model';

/**
 * What a catalog row's `model` and `runs` columns keep of the routes it was given. `model` alone
 * (a simulator model) is short for a simulator route: `runs` stays null, as before routes existed.
 * With `runs`, a `model` beside it adds the simulator route, and the `model` column shows the
 * simulator's model or else the first route's (it no longer decides anything: `routesOf`).
 */
export function routeColumns(given: { model?: string; runs?: ModelRoutes }): { model: string; runs: string | null } {
  if (!given.runs) return { model: given.model!, runs: null };
  const runs: ModelRoutes = given.model === undefined ? given.runs : { simulator: { model: given.model }, ...given.runs };
  const shown = runs.simulator ?? providerKinds.map((kind) => runs[kind]).find((route) => route !== undefined)!;
  return { model: shown.model, runs: JSON.stringify(runs) };
}
