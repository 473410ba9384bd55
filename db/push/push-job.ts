/**
 * One push to every device of a user (the `push-send` queue): what it is about, as `kind` and
 * `reference` (a delivery is logged once per kind, reference and device, so a retried job skips the
 * devices it reached), and its data, strings only as the gateways carry them. The texts are chosen
 * per kind in the user's language (`workers/push/push-messages.ts`). The marketplace's
 * `effect_earned` and `effect_removed` join as kinds of their own.
 */
export type PushKind = 'generation' | 'subscription_reminder';

export interface PushJob {
  userId: string;
  kind: PushKind;
  /** The generation id; `<subscription id>:<period>:<days left>` for a reminder. */
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
