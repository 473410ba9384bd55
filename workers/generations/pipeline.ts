import type { RunningPart, Services } from '../../services';
import { AccountKeys, syncProviderAccounts } from '../../pool/accounts';
import type { ProviderAdapter } from '../../pool/provider/adapter';
import { Dispatcher } from './dispatcher';
import { PollLoop } from './poll-loop';
import { sweeper } from './sweeps';
import { Wakeup } from '../runtime/wakeup';

/**
 * The generation pipeline of one `worker` process: the pool synced with PROVIDER_ACCOUNTS, a
 * LISTEN that wakes the dispatcher when a generation is created, the dispatcher (with the sweeps
 * between its rounds) and the poll loop. Stops in reverse: no new work, then in-flight work finishes.
 */
export async function startGenerationWorker(services: Services, adapter: ProviderAdapter): Promise<RunningPart> {
  const { db, log, config } = services;
  const settings = config.generations;
  await syncProviderAccounts(db, settings.providerAccounts);
  const keys = new AccountKeys(db, settings.providerAccounts);
  const dispatchWakeup = new Wakeup();
  const pollWakeup = new Wakeup();
  const wakeDispatcher = () => dispatchWakeup.wake();
  // Often enough that an expired claim (a crashed worker) or an overdue pending is noticed well within its own timeout.
  const sweepIntervalMs = Math.max(100, Math.min(5000, (settings.pendingTimeoutS * 1000) / 4, (settings.slotLeaseS * 1000) / 2));

  const dispatcher = new Dispatcher(services, adapter, keys, dispatchWakeup, () => pollWakeup.wake(), sweeper(services, sweepIntervalMs, wakeDispatcher));
  const pollLoop = new PollLoop(services, adapter, keys, pollWakeup, wakeDispatcher);
  const unsubscribe = await services.listenHub.subscribe('generation_status', null, {
    // A new generation: something to dispatch.
    notify: (event) => { if (event.status === 'pending') wakeDispatcher(); },
    resync: wakeDispatcher,
  });
  const listener = { stop: async () => unsubscribe() };
  const running = [listener, dispatcher.start(), pollLoop.start()];
  log.info({ accounts: settings.providerAccounts.length, slots: settings.providerAccounts.reduce((sum, account) => sum + account.slots, 0) }, 'generation worker started');
  return { stop: async () => { for (const part of running.reverse()) await part.stop(); } };
}
