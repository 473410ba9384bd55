import type { Knex } from 'knex';

/** A pending generation got a new ticket (its old one was gone): the row names it. */
export async function recordSubmitJob(trx: Knex.Transaction, generationId: string, jobId: string): Promise<void> {
  await trx.raw("update generations set submit_job_id = :jobId where id = :generationId and status = 'pending'", { generationId, jobId });
}
