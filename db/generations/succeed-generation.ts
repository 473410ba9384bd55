import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import { releaseSlotsOf } from '../pool/release-generation-slot';
import { earningBindings, recordEarningsOf, type EarningTerms } from '../user-effects/record-earning';
import { generationStatusNotifySql, HAS_PUSH_DEVICE, pushTerminalStatus } from './announce';
import type { StoredGenerationPreview } from './model';
import { tallySuccessesOf } from './roll-up-success-counts';

/**
 * processing -> succeeded, once the result is stored and its preview made by the `media` role (or
 * its copy failed: `preview` null).
 */
export async function succeedGeneration(
  trx: Knex.Transaction,
  boss: PgBoss,
  outcome: { generationId: string; preview: StoredGenerationPreview | null },
  earnings: EarningTerms,
): Promise<boolean> {
  return succeed(trx, boss, {
    set: 'preview = :preview',
    where: "id = :generationId and status = 'processing' and (result_key is not null or result_text is not null)",
    bindings: { generationId: outcome.generationId, preview: outcome.preview ? JSON.stringify(outcome.preview) : null },
  }, earnings);
}

/**
 * A transition to succeeded (`set` besides the status and `finished_at`, guarded by `where`) and
 * what every success does, in the same statement: the slot given back (a no-op when none is held
 * any more); the tally for the catalog's popularity order; with an approved user effect of another
 * user, its author's pending earning; the NOTIFY. One round trip where they took five; only a user
 * with a push device adds the `push-send` job, in the caller's transaction. Answers false when the
 * guard refused (a duplicate or late call: nothing written).
 */
export async function succeed(
  trx: Knex.Transaction,
  boss: PgBoss,
  transition: { set: string; where: string; bindings: Record<string, string | null> },
  earnings: EarningTerms,
): Promise<boolean> {
  const { rows: [row] } = await trx.raw<{ rows: { id: string; user_id: string; has_push_device: boolean }[] }>(
    `with succeeded as (
       update generations set ${transition.set}, status = 'succeeded', finished_at = now()
       where ${transition.where}
       returning id, user_id, effect_id, cost, ${HAS_PUSH_DEVICE}
     ),
     released as (${releaseSlotsOf('succeeded')}),
     tallied as (${tallySuccessesOf('succeeded')}),
     earned as (${recordEarningsOf('succeeded')})
     select id, user_id, has_push_device, ${generationStatusNotifySql('succeeded')} from succeeded`,
    { ...transition.bindings, ...earningBindings(earnings) },
  );
  if (!row) return false;
  await pushTerminalStatus(trx, boss, { id: row.id, user_id: row.user_id, status: 'succeeded', error_code: null, has_push_device: row.has_push_device });
  return true;
}
