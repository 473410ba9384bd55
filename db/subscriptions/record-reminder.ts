import type { Knex } from 'knex';

/** Logs the reminder `daysLeft` of the subscription's period; false when it was sent before (each once per period). */
export async function recordReminder(trx: Knex.Transaction, reminder: { subscriptionId: string; period: number; daysLeft: number }): Promise<boolean> {
  const { rows } = await trx.raw<{ rows: unknown[] }>(
    `insert into subscription_reminders (subscription_id, period, days_left) values (:subscriptionId, :period, :daysLeft)
     on conflict do nothing returning 1`,
    reminder,
  );
  return rows.length === 1;
}
