import { AccountKeys } from '../pool/accounts';
import { stopAll, type RunningPart, type Services } from '../services';
import { startIdpBRevocation } from './accounts/revoke-idp-b';
import { startGenerationPipeline } from './generations/pipeline';
import { startProvider } from './generations/provider';
import { startPushSend } from './push/push-send';
import { startSubscriptionRenewals } from './subscriptions/renewal';
import { startModeration } from './user-effects/moderation';

/**
 * The `worker` role: the generation pipeline's provider side (lease a slot, submit, poll, store the
 * result, refund) and the small jobs that go with it. Any number of copies may run against one
 * database. Each part wakes on NOTIFY through the process's one LISTEN hub, or on its own tick;
 * stopping goes in reverse (no new work, then what is in flight finishes), the provider last.
 */
export async function startWorker(services: Services): Promise<RunningPart> {
  const provider = await startProvider(services);
  const parts: RunningPart[] = [
    provider,
    // `user-effect-moderation` jobs (NOTIFY `user_effect_status`): a round of the provider's moderation
    // model on a leased slot. Before the pipeline, whose LISTEN on `generation_status` is then the
    // hub's last, the one readiness checks look for (`pg_stat_activity.query`).
    await startModeration(services, { adapters: provider.adapters, keys: new AccountKeys(services.db, services.config.generations.providerAccounts) }),
    // `generation-submit.<kind>` tickets (NOTIFY `generation_status`) and the shared poll loop.
    await startGenerationPipeline(services, provider.adapters),
    // `push-send` jobs: terminal generation statuses, subscription reminders.
    await startPushSend(services),
    // `subscription-renew` jobs: a saved card charged for a subscription's next period.
    await startSubscriptionRenewals(services),
    // `revoke-idp-b` jobs, one per idp_b grant of a deleted account.
    await startIdpBRevocation(services),
  ];
  services.log.info({ role: 'worker', parts: parts.length }, 'role started');
  return stopAll(parts);
}
