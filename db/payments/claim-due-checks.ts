import type { Knex } from 'knex';
import type { PaymentRow, PaymentStatus } from './model';
import type { WatchSettings } from './watch';

/**
 * Claims up to PAYMENT_RECONCILE_BATCH payments in `statuses` whose check is due, in one statement
 * (`for update skip locked`, moving `next_check_at` on to the next check its status asks for, or to
 * null when its watch is over), so rounds running at once in several processes never check a
 * payment twice, and a payment whose check failed is simply due again next time.
 */
export async function claimDueChecks(db: Knex, statuses: PaymentStatus[], settings: WatchSettings): Promise<PaymentRow[]> {
  const { rows } = await db.raw<{ rows: PaymentRow[] }>(
    `with due as (
       select id from payments
       where next_check_at <= now() and status = any(:statuses)
       order by next_check_at
       limit :batch
       for update skip locked
     )
     update payments p set
       next_check_at = case
         when p.status = 'created' then now() + make_interval(secs => :intervalS)
         when p.status in ('failed', 'expired') and p.created_at + make_interval(secs => :lateWatchS) > now()
           then now() + make_interval(secs => :lateIntervalS)
         when p.status = 'succeeded' and p.paid_at + make_interval(days => :chargebackWatchDays) > now()
           then now() + make_interval(secs => :chargebackIntervalS)
       end
     from due where p.id = due.id
     returning p.*`,
    {
      statuses,
      batch: settings.reconcileBatch,
      intervalS: settings.reconcileIntervalS,
      lateWatchS: settings.lateWatchS,
      lateIntervalS: settings.lateCheckIntervalS,
      chargebackWatchDays: settings.chargebackWatchDays,
      chargebackIntervalS: settings.chargebackCheckIntervalS,
    },
  );
  return rows;
}
