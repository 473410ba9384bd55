import type { Knex } from 'knex';
import type { GenerationStatusEvent } from './generations/model';
import type { PaymentStatusEvent } from './payments/model';
import type { UserEffectStatusEvent } from './user-effects/model';

/**
 * Every NOTIFY channel of the service, by its one name, with the JSON its payloads carry (a few
 * hundred bytes, far below NOTIFY's 8000). Each process listens on ONE session connection, the
 * LISTEN hub (`db/listen-hub.ts`); the SSE streams and the worker loops subscribe there.
 */
export interface ChannelPayloads {
  /** Every status change of a generation, creation included: the generation streams, and the dispatchers (`pending`). */
  generation_status: GenerationStatusEvent;
  /**
   * The provider called back that a generation's task finished (its slot is free, its poll due):
   * wakes every worker's poll loop and dispatcher at once instead of at their next look.
   */
  provider_task_done: { id: string };
  /** A result was stored: wakes the preview consumers at once instead of at their next look. */
  generation_media: { id: string };
  /** Every status change of a payment: the payment streams. */
  payment_status: PaymentStatusEvent;
  /** Every status change of a user effect, creation included: the user-effect streams. */
  user_effect_status: UserEffectStatusEvent;
  /** A moderation verdict was recorded: wakes the media role's user-effect consumers at once. */
  user_effect_media: { id: string };
  /**
   * The public catalog changed (sent by the triggers of the catalog-version migration, `version` is
   * the new `catalog_version`), or a `probe` a process sent itself to learn that every earlier change
   * has reached it: the web processes' catalog caches (`api/catalog/catalog-cache.ts`).
   */
  catalog_changed: { version: number } | { probe: string };
}

export type Channel = keyof ChannelPayloads;

/**
 * Announces a change inside the transaction that makes it: Postgres delivers the NOTIFY at commit,
 * so listeners never hear of a change that was rolled back.
 */
export async function notify<C extends Channel>(trx: Knex.Transaction, channel: C, payload: ChannelPayloads[C]): Promise<void> {
  await trx.raw('select pg_notify(?, ?)', [channel, JSON.stringify(payload)]);
}
