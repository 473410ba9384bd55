import type { Knex } from 'knex';
import type { ProviderKind } from '../../common/model-route';
import { simulatedRoute } from '../../simulators/providers/simulated-kinds';

/**
 * The catalog's effects routed on `kind` only, each on the simulator's model it named: what an
 * operator with accounts of that kind alone imports, so that every effect is offered and runs there
 * (the simulator speaking that kind's protocol). The simulator's own kind needs nothing: an effect
 * without routes runs on it. A change of `effects` drops the catalog's cached answers.
 */
export async function routeEffectsOn(db: Knex, kind: ProviderKind): Promise<void> {
  if (kind === 'simulator') return;
  const models: string[] = await db('effects').distinct('model').pluck('model');
  for (const model of models) {
    await db('effects').where({ model }).update({ runs: JSON.stringify({ [kind]: simulatedRoute(kind, model) }) });
  }
}
