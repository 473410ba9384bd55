import type { Knex } from 'knex';
import { routeColumns } from '../catalog/route-columns';
import type { UserEffectRuns } from './model';

/**
 * The catalog effects of user effects take the marketplace's routes of this configuration
 * (USER_EFFECT_IMAGE_RUNS, USER_EFFECT_VIDEO_RUNS), so a change of them reaches the effects made
 * before it; run by each web process at start. Each output type is one guarded statement, run only
 * when some row differs: a statement on `effects` bumps the catalog version even when it changes
 * no row, and every web process would drop its cached catalog at every start. Answers the rows changed.
 */
export async function applyUserEffectRuns(db: Knex, runs: UserEffectRuns): Promise<number> {
  let changed = 0;
  const stale = 'ue.output_type = :outputType and (e.runs is distinct from :runs::jsonb or e.model is distinct from :model)';
  for (const outputType of ['image', 'video'] as const) {
    const columns = { ...routeColumns({ runs: runs[outputType] }), outputType };
    const { rows: [found] } = await db.raw<{ rows: { any: boolean }[] }>(
      `select exists (select 1 from effects e join user_effects ue on ue.effect_id = e.id where ${stale}) as any`, columns);
    if (!found.any) continue;
    const { rowCount } = await db.raw(`update effects e set runs = :runs::jsonb, model = :model, updated_at = now()
      from user_effects ue where ue.effect_id = e.id and ${stale}`, columns);
    changed += rowCount ?? 0;
  }
  return changed;
}
