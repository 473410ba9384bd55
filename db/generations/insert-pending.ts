import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import type { ModelRoute, ProviderKind } from '../../common/model-route';
import { generationStatusNotifySql } from './announce';
import type { GenerationInput, GenerationKind, OutputType } from './model';
import { sendSubmitJob } from './submit-ticket';

export interface NewGeneration {
  id: string;
  userId: string;
  kind: GenerationKind;
  /** The effect of an effect generation, the studio category of a studio one. */
  effectId: string | null;
  studioCategoryId: string | null;
  prompt: string | null;
  cost: number;
  outputType: OutputType;
  model: string;
  /**
   * The provider kind it runs on and how (`pool/model-routes.ts`), chosen at its creation and kept: a
   * later change of the catalog or of the accounts never changes a task already in line.
   */
  providerKind: ProviderKind;
  route: ModelRoute;
  inputs: GenerationInput[];
  /** The API read each photo's header and found a usable image: the dispatcher reads none (`photo_headers_checked`). */
  photoHeadersChecked?: boolean;
}

/**
 * none -> pending, inside the creating transaction (after the reserve): the row with its NOTIFY
 * (one statement), and its FIFO ticket in its kind's `generation-submit.<kind>`, all commit together or not at all.
 * Refused (false, nothing written) when `maxPending` generations wait already: the queue's extreme
 * limit, checked by the same statement. Counting stops at `maxPending`, so the check stays cheap.
 */
export async function insertPending(trx: Knex.Transaction, boss: PgBoss, generation: NewGeneration, maxPending: number): Promise<boolean> {
  const { rows } = await trx.raw<{ rows: unknown[] }>(
    `with inserted as (
       insert into generations (id, user_id, kind, effect_id, studio_category_id, prompt, status, cost, output_type, model,
         provider_kind, route, inputs, photo_headers_checked, submit_job_id)
       select :id, :userId, :kind, :effectId, :studioCategoryId, :prompt, 'pending', :cost, :outputType, :model,
         :providerKind, :route, :inputs, :photoHeadersChecked, :id
       where (select count(*) from (select 1 from generations where status = 'pending' limit :maxPending) waiting) < :maxPending
       returning id, user_id, photo_headers_checked
     )
     select ${generationStatusNotifySql('pending')} from inserted`,
    { ...generation, route: JSON.stringify(generation.route), inputs: JSON.stringify(generation.inputs), photoHeadersChecked: generation.photoHeadersChecked ?? false, maxPending },
  );
  if (!rows.length) return false;
  await sendSubmitJob(boss, trx, generation.providerKind, generation.id);
  return true;
}
