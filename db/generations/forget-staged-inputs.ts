import type { Knex } from 'knex';

/**
 * The provider refused the photos staged with it (its store lost them: a provider restarted, an
 * embedded simulator on another port): the generation's next submission sends our own links.
 */
export async function forgetStagedInputs(trx: Knex.Transaction, generationId: string): Promise<void> {
  await trx.raw('update generations set staged_inputs = null, staged_inputs_until = null where id = :generationId', { generationId });
}
