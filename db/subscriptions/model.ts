/** Rows of the subscriptions domain, in one place. */

export type PlanPeriod = 'week' | 'month' | 'year';

/** Billing days per period. */
export const periodDays: Record<PlanPeriod, number> = { week: 7, month: 30, year: 365 };

export type SubscriptionStatus = 'pending' | 'active' | 'past_due' | 'expired' | 'revoked';

/** The statuses that hold the plan for `409 already_subscribed` (and the unique index behind it). */
export const liveStatuses: readonly SubscriptionStatus[] = ['pending', 'active', 'past_due'];

export const cancelReasons = ['too_expensive', 'not_using', 'missing_features', 'quality', 'technical_issues', 'switched_service', 'other'] as const;
export type CancelReason = (typeof cancelReasons)[number];

/** Why a subscription ended, for operators (`subscriptions.ended_reason`). */
export type EndedReason = 'canceled' | 'payment_expired' | 'not_registered' | 'renewal_declined' | 'payment_refunded';

/** Renewal charges for one period: at its end, then 1 and 3 billing days later. */
export const maxRenewalAttempts = 3;

export interface PlanRow {
  id: string;
  code: string;
  title_ru: string;
  title_en: string;
  description_ru: string;
  description_en: string;
  period: PlanPeriod;
  price_minor: number;
  renewal_price_minor: number | null;
  currency: number;
  credits: number;
  badge: string | null;
  position: number;
  enabled: boolean;
  offer_only: boolean;
}

export interface SubscriptionRow {
  id: string;
  user_id: string;
  plan_id: string;
  offer_issue_id: string | null;
  status: SubscriptionStatus;
  period_days: number;
  billing_day_s: number;
  credits: number;
  renewal_price_minor: number;
  currency: number;
  period: number;
  current_period_start: Date | null;
  current_period_end: Date | null;
  renewal_attempts: number;
  payment_id: string | null;
  card_binding_id: string | null;
  cancel_at_period_end: boolean;
  canceled_at: Date | null;
  cancel_reason: CancelReason | null;
  cancel_comment: string | null;
  ended_at: Date | null;
  ended_reason: EndedReason | null;
  next_action_at: Date | null;
  created_at: Date;
}
