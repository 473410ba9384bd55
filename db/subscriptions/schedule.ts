/**
 * When the scheduler's clock looks at a subscription next (`subscriptions.next_action_at`), as SQL
 * over the row's own columns, for the statements that start a period or send a reminder. Times are
 * counted in the subscription's billing days (`billing_day_s`).
 */

/** Reminders before the period end, in billing days. */
export const reminderDays = [3, 1] as const;

/** Renewal retries after the period end, in billing days, for the 2nd and 3rd charge. */
export const retryDaysAfterEnd = [1, 3] as const;

/** The length of one period of the row. */
export const periodLengthSql = 'make_interval(secs => period_days * billing_day_s)';

/**
 * The next moment an active subscription whose period ends at `periodEnd` needs the clock: the
 * first reminder still ahead, else the end itself.
 */
export function nextActiveActionSql(periodEnd: string): string {
  const reminders = reminderDays.map((days) => `${periodEnd} - make_interval(secs => ${days} * billing_day_s)`).join(', ');
  return `(select coalesce(min(moment), ${periodEnd}) from unnest(array[${reminders}]) as moment where moment > now())`;
}
