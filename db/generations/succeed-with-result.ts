import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import type { EarningTerms } from '../user-effects/record-earning';
import { RESULT_NOT_STORED_YET, RESULT_STORED_SET, storedResultBindings, type StoredResultOf } from './mark-result-stored';
import type { StoredGenerationPreview } from './model';
import { succeed } from './succeed-generation';

/**
 * processing (provider running) -> succeeded, in one step: the worker that copied the result has
 * its preview already (an image's, built from the bytes it holds; a text answer has none), so no
 * `generation-media` job is needed. `preview` null: the copy failed, and the generation succeeds
 * without one (the contract). Like `markResultStored`, it gives the slot back (covering a worker
 * that stored a result another one had polled) and is guarded: the first stored result wins.
 */
export async function succeedWithResult(
  trx: Knex.Transaction,
  boss: PgBoss,
  result: { generationId: string; preview: StoredGenerationPreview | null } & StoredResultOf,
  earnings: EarningTerms,
): Promise<boolean> {
  return succeed(trx, boss, {
    set: `${RESULT_STORED_SET}, preview = :preview`,
    where: RESULT_NOT_STORED_YET,
    bindings: { ...storedResultBindings(result), preview: result.preview ? JSON.stringify(result.preview) : null },
  }, earnings);
}
