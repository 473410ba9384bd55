import type { PgBoss } from 'pg-boss';
import { queues } from '../../db/boss';
import { eraseUserFiles } from '../../api/accounts/profile';
import { pruneRateLimits } from '../../api/http/rate-limit';
import type { Services } from '../../api/services';
import { deleteExpiredRefreshTokens } from '../../api/tokens/refresh-tokens';

/**
 * Hourly account clean-up, cron-scheduled from the scheduler role: guests with no sign-in for
 * GUEST_RETENTION_DAYS (30) are deleted with their files; their devices keep the start-credit mark
 * (the `devices` row is not the user's), so a new guest there starts at zero. Expired refresh tokens
 * and idle rate-limit rows go too.
 */
const batchSize = 100;
const everyHour = '23 * * * *';
// Longer than any bucket needs to refill and any login lock or guard lasts with the defaults.
const rateLimitRowsKeptS = 24 * 3600;

/** Deletes expired guests in batches; answers how many. */
export async function expireGuests(services: Services): Promise<number> {
  const { db, storage, config } = services;
  const idle = db.raw("now() - ? * interval '1 day'", [config.guestRetentionDays]);
  let deleted = 0;
  for (;;) {
    const guests: { id: string }[] = await db('users').where({ is_anonymous: true }).andWhere('last_sign_in_at', '<', idle).limit(batchSize).select('id');
    for (const guest of guests) {
      // Files first: if storage fails, the guest stays and the next run tries again.
      await eraseUserFiles(storage, guest.id);
      // Guarded: a guest that signed in (or registered) meanwhile is kept.
      deleted += await db('users').where({ id: guest.id, is_anonymous: true }).andWhere('last_sign_in_at', '<', idle).delete();
    }
    if (guests.length < batchSize) return deleted;
  }
}

export async function registerExpireGuests(boss: PgBoss, services: Services): Promise<void> {
  await boss.schedule(queues.expireGuests, everyHour);
  await boss.work(queues.expireGuests, async () => {
    const guests = await expireGuests(services);
    const refreshTokens = await deleteExpiredRefreshTokens(services.db);
    await pruneRateLimits(services.db, rateLimitRowsKeptS);
    services.log.info({ guests, refreshTokens }, 'expired guests and sessions deleted');
  });
}
