import { expect } from 'chai';
import { providerKinds, type ProviderKind } from '../../../common/model-route';
import type { ModelRoutes } from '../../../db/catalog/model';
import { hasRouteFor } from '../../../db/catalog/offered';
import { chooseRoute, configuredKinds, offeredKinds, routesOf } from '../../../pool/model-routes';
import { services } from '../../harness';

/** Every subset of `items`, the empty one first. */
const subsets = <T>(items: readonly T[]): T[][] => items.reduce<T[][]>((all, item) => [...all, ...all.map((subset) => [...subset, item])], [[]]);

describe('hasRouteFor: the catalog\'s SQL for "a provider kind with an account runs it"', () => {
  it('answers as chooseRoute does, for every set of routes, accounts and order', async () => {
    const runs: (ModelRoutes | null)[] = [null, ...subsets(providerKinds).filter((kinds) => kinds.length)
      .map((kinds) => Object.fromEntries(kinds.map((kind) => [kind, { model: 'owner/model' }])))];
    const orders: ProviderKind[][] = [['replicate', 'fal', 'simulator'], ['fal', 'simulator'], ['simulator', 'replicate'], []];
    let compared = 0;
    for (const accounts of subsets(providerKinds)) {
      for (const order of orders) {
        const generations = { providerKindOrder: order, providerAccounts: accounts.map((kind) => ({ kind })) };
        const { rows } = await services().db.raw<{ rows: { answer: boolean }[] }>(
          `select ${hasRouteFor('r', offeredKinds(generations))} as answer
           from jsonb_array_elements(?::jsonb) with ordinality as listed(value, place),
             lateral (select nullif(listed.value, 'null'::jsonb) as runs) r
           order by place`,
          [JSON.stringify(runs)],
        );
        const expected = runs.map((value) => chooseRoute(routesOf(value, 'image'), order, configuredKinds(generations.providerAccounts)) !== null);
        expect(rows.map((row) => row.answer), `accounts ${accounts.join(',')}, order ${order.join(',')}`).to.deep.equal(expected);
        compared += rows.length;
      }
    }
    expect(compared).to.equal(8 * 4 * 8);
  });

  it('writes only provider kinds into the statement', () => {
    expect(() => hasRouteFor('e', ["fal') or true or ('" as ProviderKind])).to.throw('not a provider kind');
  });
});
