/**
 * One push to every device of a user (the `push-send` queue): what it is about, as `kind` and
 * `reference` (a delivery is logged once per kind, reference and device, so a retried job skips the
 * devices it reached), and its data, strings only as the gateways carry them. The texts are chosen
 * per kind in the user's language (`workers/push/push-messages.ts`).
 */
export type PushKind = 'generation' | 'subscription_reminder' | 'effect_earned' | 'effect_removed';

export interface PushJob {
  userId: string;
  kind: PushKind;
  /** The generation id; `<subscription id>:<period>:<days left>` for a reminder; the earning id; the user effect id. */
  reference: string;
  data: Record<string, string>;
}

/** A terminal generation status (contract part B, "Push notifications"). */
export function generationPush(event: { userId: string; generationId: string; status: 'succeeded' | 'failed'; errorCode: string | null }): PushJob {
  return {
    userId: event.userId,
    kind: 'generation',
    reference: event.generationId,
    data: { generation_id: event.generationId, status: event.status, error_code: event.errorCode ?? '' },
  };
}

/** A subscription's period ends in `daysLeft` billing days: `{status: "period_ending", days_left: "3"}` (strings, as the contract says). */
export function subscriptionReminderPush(reminder: { userId: string; subscriptionId: string; period: number; daysLeft: number }): PushJob {
  return {
    userId: reminder.userId,
    kind: 'subscription_reminder',
    reference: `${reminder.subscriptionId}:${reminder.period}:${reminder.daysLeft}`,
    data: { subscription_id: reminder.subscriptionId, status: 'period_ending', days_left: String(reminder.daysLeft) },
  };
}

/** Author earnings credited (contract B: a push at the moment of crediting): `{status: "settled", amount: "2", ...}`. */
export function effectEarnedPush(earning: { id: string; user_id: string; user_effect_id: string; effect_id: string; amount: number }): PushJob {
  return {
    userId: earning.user_id,
    kind: 'effect_earned',
    reference: earning.id,
    data: { earning_id: earning.id, user_effect_id: earning.user_effect_id, effect_id: earning.effect_id, amount: String(earning.amount), status: 'settled' },
  };
}

/** An operator removed the author's user effect (never sent for the author's own removal): `{status: "archived", ...}`. */
export function effectRemovedPush(userEffect: { id: string; user_id: string; effect_id: string | null }): PushJob {
  return {
    userId: userEffect.user_id,
    kind: 'effect_removed',
    reference: userEffect.id,
    data: { user_effect_id: userEffect.id, effect_id: userEffect.effect_id ?? '', status: 'archived' },
  };
}
