import { cancelSubscription } from '../../db/subscriptions/cancel-subscription';
import { liveStatuses, type CancelReason } from '../../db/subscriptions/model';
import type { Services } from '../../services';
import { errors, invalidStatus } from '../http/errors';
import { findOwnSubscription, subscriptionView, type SubscriptionView } from './views';

export interface CancelBody {
  reason: CancelReason;
  comment?: string;
}

/**
 * `POST /v1/subscriptions/{id}/cancel`: another's or absent `404`; a live one is cancelled
 * (`db/subscriptions/cancel-subscription.ts`); a second cancel of one already set to end answers it
 * as it is; an ended one (`expired`, `revoked`) is `422 invalid_status`.
 */
export async function cancelOwnSubscription(services: Services, userId: string, subscriptionId: string, body: CancelBody): Promise<SubscriptionView> {
  const { db } = services;
  if (!(await findOwnSubscription(db, userId, subscriptionId))) throw errors.notFound();
  const canceled = await db.transaction((trx) => cancelSubscription(trx, { id: subscriptionId, userId, reason: body.reason, comment: body.comment ?? null }));
  const current = (await findOwnSubscription(db, userId, subscriptionId))!;
  if (!canceled && !(liveStatuses.includes(current.status) && current.cancel_at_period_end)) {
    throw invalidStatus(`A subscription that is ${current.status} cannot be cancelled.`);
  }
  return subscriptionView(current);
}
