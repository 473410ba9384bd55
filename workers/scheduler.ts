import { stopAll, type RunningPart, type Services } from '../services';
import { startPaymentJobs } from './payments/reconciliation-jobs';
import { registerExpireGuests } from './accounts/expire-guests';

/**
 * The `scheduler` role: timed work through pg-boss cron (guest clean-up, payment reconciliation,
 * chargeback watch). pg-boss lets only one copy fire each schedule, so several may run.
 */
export async function startScheduler(services: Services): Promise<RunningPart> {
  const parts: RunningPart[] = [];
  parts.push(await startPaymentJobs(services));
  await registerExpireGuests(services.boss, services);
  services.log.info({ role: 'scheduler', parts: parts.length }, 'role started');
  return stopAll(parts);
}
