import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import type { GenerationInput, OutputType } from '../model';
import { sendSubmitJob } from '../submit-job';
import { notifyGenerationStatus } from './announce';

export interface NewGeneration {
  id: string;
  userId: string;
  effectId: string;
  cost: number;
  outputType: OutputType;
  model: string;
  inputs: GenerationInput[];
}

/**
 * none -> pending, inside the creating transaction (after the reserve): the row, its FIFO ticket
 * in `generation-submit` and the NOTIFY that wakes the dispatchers all commit together or not at all.
 */
export async function insertPending(trx: Knex.Transaction, boss: PgBoss, generation: NewGeneration): Promise<void> {
  await trx('generations').insert({
    id: generation.id,
    user_id: generation.userId,
    effect_id: generation.effectId,
    status: 'pending',
    cost: generation.cost,
    output_type: generation.outputType,
    model: generation.model,
    inputs: JSON.stringify(generation.inputs),
    submit_job_id: generation.id,
  });
  await sendSubmitJob(boss, trx, generation.id);
  await notifyGenerationStatus(trx, { id: generation.id, user_id: generation.userId, status: 'pending', error_code: null });
}
