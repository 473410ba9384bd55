import { deleteAccount } from '../../services/accounts/delete-account';
import { findIdleGuests } from '../../db/accounts/find-idle-guests';
import { deleteExpiredRefreshTokens } from '../../db/accounts/refresh-tokens';
import { pruneRateLimits } from '../../db/rate-limits/prune-rate-limits';
import type { RunningPart, Services } from '../../services';
import { startQueueConsumer } from '../runtime/queue-consumer';

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
  const days = services.config.guestRetentionDays;
  let deleted = 0;
  for (;;) {
    const guests = await findIdleGuests(services.db, days, batchSize);
    for (const guestId of guests) {
      if (await deleteAccount(services, guestId, { idleGuestForDays: days })) deleted += 1;
    }
    if (guests.length < batchSize) return deleted;
  }
}

/** The hourly clean-up on pg-boss cron (one scheduler fires it, however many run). */
export async function startGuestExpiry(services: Services): Promise<RunningPart> {
  return startQueueConsumer(services, {
    queue: 'expire-guests',
    cron: everyHour,
    concurrency: 1,
    handle: async () => {
      const guests = await expireGuests(services);
      const refreshTokens = await deleteExpiredRefreshTokens(services.db);
      await pruneRateLimits(services.db, rateLimitRowsKeptS);
      services.log.info({ guests, refreshTokens }, 'expired guests and sessions deleted');
    },
  });
}
