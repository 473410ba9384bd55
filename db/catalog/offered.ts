import { isProviderKind, type ProviderKind } from '../../common/model-route';

/**
 * SQL: the row `alias` (an effect, a studio category) has a route for one of `kinds`, the kinds a
 * task may go to here (`offeredKinds` of pool/model-routes.ts). It answers as `chooseRoute(routesOf(
 * runs, model), ...)` does: a row without routes (`runs` null) runs on the simulator's model. The
 * kinds are written into the statement: a closed list of names, checked here.
 */
export function hasRouteFor(alias: string, kinds: readonly ProviderKind[]): string {
  const conditions = kinds.map((kind) => {
    if (!isProviderKind(kind)) throw new Error(`not a provider kind: ${String(kind)}`);
    return `jsonb_typeof(${alias}.runs -> '${kind}') = 'object'`;
  });
  if (kinds.includes('simulator')) conditions.unshift(`${alias}.runs is null`);
  // Never null (a null route is no route), so `not hasRouteFor(...)` holds exactly for the others.
  return conditions.length ? `coalesce(${conditions.join(' or ')}, false)` : 'false';
}
