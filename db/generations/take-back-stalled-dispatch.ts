import type { Knex } from 'knex';

/**
 * pending (claim ran out) -> pending (waiting): the claim of a worker that died or stalled between
 * taking the generation and recording its submission is taken back. Guarded by the expired claim,
 * so of several sweeps only one takes it. Answers whether it did, with the generation's ticket.
 */
export async function takeBackStalledDispatch(trx: Knex.Transaction, generationId: string): Promise<{ submitJobId: string | null } | null> {
  const { rows } = await trx.raw<{ rows: { submit_job_id: string | null }[] }>(
    `update generations set dispatch_until = null
     where id = :generationId and status = 'pending' and dispatch_until < now()
     returning submit_job_id`,
    { generationId },
  );
  return rows[0] ? { submitJobId: rows[0].submit_job_id } : null;
}
