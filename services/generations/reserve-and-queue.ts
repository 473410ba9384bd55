import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { debit, Shortfall } from '../../db/credits/ledger';
import { insertPending, type NewGeneration } from '../../db/generations/insert-pending';
import type { Services } from '..';

/** What a generation is to run and cost, as its kind's checks made it (the look at its photos comes apart: `reserveAndQueue`). */
export type GenerationPlan = Omit<NewGeneration, 'id' | 'userId' | 'photoHeadersChecked'>;

/**
 * Inside the caller's transaction: reserve the cost (402), check the queue (503) and insert the
 * pending generation with its ticket. Answers the new id, or why it could not start (nothing is
 * written then, once the caller rolls back): the ledger's `Shortfall`, or a full queue. Also used by
 * the replay of failed generations. `photoHeadersChecked`, awaited after the reserve (the look at the
 * photos runs beside it): whether the API found each photo's header a usable image; its rejection
 * (a photo's refusal) is thrown.
 */
export async function reserveAndQueue(
  trx: Knex.Transaction,
  services: Services,
  userId: string,
  plan: GenerationPlan,
  photoHeadersChecked: Promise<boolean> = Promise.resolve(false),
): Promise<string | Shortfall | 'queue_full'> {
  const id = randomUUID();
  const reserved = await debit(trx, { userId, kind: 'reserve', amount: plan.cost, reference: id, fresh: true });
  if (reserved instanceof Shortfall) return reserved;
  const generation = { id, userId, ...plan, photoHeadersChecked: await photoHeadersChecked };
  // 503 `provider_unavailable` only in the extreme case: this one would be one too many.
  if (!(await insertPending(trx, services.boss, generation, services.config.generations.maxQueuedGenerations))) return 'queue_full';
  return id;
}
