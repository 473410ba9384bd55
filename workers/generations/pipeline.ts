import { AccountCircuits } from '../../pool/account-circuits';
import { AccountKeys, accountsForLog, syncProviderAccounts } from '../../pool/accounts';
import type { ProviderAdapters } from '../../clients/providers/registry';
import { stopAll, type RunningPart, type Services } from '../../services';
import { Wakeup } from '../runtime/wakeup';
import { startDispatcher } from './dispatcher';
import { HandOverFirst } from './hand-over-first';
import { startPollLoop } from './poll-loop';
import { sweeper } from './sweeps';

/**
 * A poll loop's claim (and a claim of photo checks ahead) waits until no submission has started or
 * ended for `lullMs`, and never longer than `maxWaitMs` (`hand-over-first.ts`).
 */
const HAND_OVER_TIMING = { lullMs: 30, maxWaitMs: 150 };

/**
 * The generation pipeline of one `worker` process: the pool synced with PROVIDER_ACCOUNTS, the
 * dispatcher (woken by every new generation and every freed slot, the sweeps beside its rounds) and the poll loop,
 * each waking the other when it freed a slot or started a task, the dispatcher's hand-overs before the
 * poll loop's claims (`hand-over-first.ts`), every call the provider does not answer counted against
 * its account (`pool/account-circuits.ts`). Stops in reverse: no new work, then
 * in-flight work finishes.
 */
export async function startGenerationPipeline(services: Services, adapters: ProviderAdapters): Promise<RunningPart> {
  const { db, log, config } = services;
  const settings = config.generations;
  await syncProviderAccounts(db, settings.providerAccounts);
  const keys = new AccountKeys(db, settings.providerAccounts);
  await keys.load();
  const circuits = new AccountCircuits(db, log, settings.providerRetry);
  const dispatchWakeup = new Wakeup();
  const pollWakeup = new Wakeup();
  const wakeDispatcher = () => dispatchWakeup.wake();
  const handOverFirst = new HandOverFirst(HAND_OVER_TIMING);
  // Often enough that a dead process's claims come back within seconds, and an expired claim or an
  // overdue pending is noticed well within its own timeout.
  const sweepIntervalMs = Math.max(100, Math.min(2000, (settings.pendingTimeoutS * 1000) / 4, (settings.slotLeaseS * 1000) / 2));

  const parts = [
    await startDispatcher(services, adapters, keys, {
      circuits,
      wakeup: dispatchWakeup,
      handOverFirst,
      onSubmitted: () => pollWakeup.wake(),
      sweep: sweeper(services, { adapters, keys, circuits }, sweepIntervalMs, { onSlotsReleased: wakeDispatcher, onSubmitted: () => pollWakeup.wake() }),
    }),
    await startPollLoop(services, adapters, keys, { circuits, wakeup: pollWakeup, handOverFirst, onSlotReleased: wakeDispatcher }),
  ];
  log.info({ accounts: accountsForLog(settings.providerAccounts) }, 'generation worker started');
  return stopAll(parts);
}
