import { claimDuePolls, type DuePoll } from '../../db/generations/claim-due-polls';
import { extendPollClaim } from '../../db/generations/extend-poll-claim';
import { failGeneration } from '../../db/generations/fail-generation';
import { markResultStored, type StoredResultOf } from '../../db/generations/mark-result-stored';
import { pollPacing, schedulePoll } from '../../db/generations/schedule-poll';
import { succeedWithResult } from '../../db/generations/succeed-with-result';
import { earningTerms } from '../../db/user-effects/record-earning';
import type { StoredGenerationPreview } from '../../db/generations/model';
import type { AccountKeys } from '../../pool/accounts';
import { ResultTooLargeError, type PollOutcome, type ProviderAccount, type ProviderAdapter } from '../../clients/providers/adapter';
import type { ModelRoute } from '../../common/model-route';
import type { ProviderAdapters } from '../../clients/providers/registry';
import { releaseGenerationSlot } from '../../db/pool/release-generation-slot';
import type { AccountCircuits } from '../../pool/account-circuits';
import type { RunningPart, Services } from '../../services';
import { startJobLoop } from '../runtime/job-loop';
import type { Wakeup } from '../runtime/wakeup';
import type { HandOverFirst } from './hand-over-first';
import { answerText, resultFileType, resultText, storePreview, storeResult } from './store-result';
import { imagePreview, previewImages } from '../../media/generation-preview';

/** A result ready to record: its file in our storage (or a text answer) and an image's preview. */
type KeptResult = { result: StoredResultOf; preview: StoredGenerationPreview | null };

/**
 * The poll loop, one per worker process, on the job loop, shared with every other worker through
 * the database (`claimDuePolls`). No handler ever sleeps while a provider works: each task has its
 * `next_poll_at` and the loop wakes for the earliest one (any worker's), at most DISPATCH_TICK_MS
 * apart, or at once when the provider calls back that a task is done (`api/generations/task-callback.ts`).
 */
export async function startPollLoop(
  services: Services,
  adapters: ProviderAdapters,
  keys: AccountKeys,
  wiring: {
    /** Each account's backoff and circuit: a poll the provider did not answer counts against its account. */
    circuits: AccountCircuits;
    wakeup: Wakeup;
    /** The dispatcher's hand-overs go before each claim, and a lull after them. */
    handOverFirst: HandOverFirst;
    /** Called when this process released a slot, so the dispatcher hands it on at once. */
    onSlotReleased: () => void;
  },
): Promise<RunningPart> {
  const { db, config } = services;
  const settings = config.generations;
  const polls = new Polls(services, adapters, keys, wiring.circuits, wiring.onSlotReleased);
  /** When the next task not claimed by the last round is due, from that round's own statement. */
  let nextDueInMs: number | null = null;
  return startJobLoop(services, {
    name: 'poll',
    concurrency: settings.pollConcurrency,
    batchSize: settings.pollBatch,
    idleMs: settings.dispatchTickMs,
    claim: async (room) => {
      await wiring.handOverFirst.handOversDone();
      const claimed = await claimDuePolls(db, room, settings.pollClaimS, settings.providerTimeoutS, keys.fingerprints, services.processSession.id);
      nextDueInMs = claimed.nextDueInMs;
      return claimed.polls;
    },
    handle: (task) => polls.pollOne(task),
    // Not a full round: sleep until the next task is due (any worker's), within the tick.
    nextRoundInMs: ({ claimed, room }) => {
      if (room <= 0) return settings.dispatchTickMs;
      if (claimed === room) return 0;
      return nextDueInMs === null ? settings.dispatchTickMs : Math.max(5, Math.min(settings.dispatchTickMs, nextDueInMs));
    },
    // The provider called back: that task's poll is due now.
    wakeOn: [{ channel: 'provider_task_done' }],
    wakeup: wiring.wakeup,
  });
}

class Polls {
  constructor(
    private readonly services: Services,
    private readonly adapters: ProviderAdapters,
    private readonly keys: AccountKeys,
    private readonly circuits: AccountCircuits,
    private readonly onSlotReleased: () => void,
  ) {}

  async pollOne(task: DuePoll): Promise<void> {
    const { log } = this.services;
    try {
      const account = task.provider_account_id === null ? null : await this.keys.keyOf(task.provider_account_id);
      if (task.timed_out) {
        // Not paid for further: the provider is asked to stop it, whatever it answers.
        if (account && task.provider_task_id) await this.stopAtProvider(account, task.provider_task_id, task.route);
        return await this.fail(task, 'provider_timeout');
      }
      if (!account || !task.provider_task_id) return await this.fail(task, 'lost_account');
      const accountId = task.provider_account_id!;
      const adapter = this.adapters.of(account.kind);
      const outcome = this.outcomeCalledBack(adapter, task) ?? await this.askProvider(adapter, account, accountId, task);
      if (outcome === null) return;
      switch (outcome.kind) {
        case 'running':
          return await this.later(task);
        case 'unavailable':
          log.debug({ generationId: task.id, reason: outcome.reason }, 'provider unavailable while polling');
          return await this.later(task, await this.circuits.pollFailed(accountId));
        case 'failed':
          return await this.fail(task, outcome.errorCode);
        case 'succeeded': {
          // A text model may answer inline; an image or video is a link or nothing.
          const { resultUrl } = outcome;
          const inline = task.output_type === 'text' ? outcome.text : undefined;
          if (resultUrl === null && inline === undefined) return await this.fail(task, 'no_result_url');
          // The provider's work is over: its slot goes to the next pending now, not after the copy
          // (the callback freed it already when it came).
          if (!task.called_back && (await releaseGenerationSlot(this.services.db, task.id))) this.onSlotReleased();
          if (resultUrl !== null) return await this.copyResult(adapter, { ...task, provider_account_id: accountId }, resultUrl);
          // A text answer given inline: kept on the row as a downloaded one is.
          const text = answerText(inline as string);
          return await this.storeKept(task, text === null ? null : { result: { text }, preview: null });
        }
      }
    } catch (error) {
      // The claim runs out and this task is polled again.
      log.error({ err: error, generationId: task.id }, 'poll failed');
    }
  }

  /**
   * The finished task's outcome as its callback gave it (`callback_answer`), so the provider is not
   * asked again; null when there is none, or it names no final outcome, or a success without its
   * result (fal sends `payload_error` in place of a payload it could not send): the provider then
   * tells.
   */
  private outcomeCalledBack(adapter: ProviderAdapter, task: DuePoll): PollOutcome | null {
    if (task.callback_answer === null) return null;
    const outcome = adapter.outcomeOfCallback(task.callback_answer, task.route ?? undefined);
    if (outcome.kind === 'failed') return outcome;
    return outcome.kind === 'succeeded' && (outcome.resultUrl !== null || outcome.text !== undefined) ? outcome : null;
  }

  /**
   * The provider's answer to a poll of the task; null when the account's circuit is open and
   * another poll probes it (this one is deferred meanwhile).
   */
  private async askProvider(adapter: ProviderAdapter, account: ProviderAccount, accountId: number, task: DuePoll): Promise<PollOutcome | null> {
    if (task.circuit_open) {
      // The account is not answering: one poll of all its tasks probes it, the others wait for the outcome.
      const probe = await this.circuits.mayCall(accountId);
      if (!probe.go) {
        await this.later(task, probe.retryInMs);
        return null;
      }
    }
    const outcome = await adapter.poll(account, task.provider_task_id!, task.route ?? undefined);
    if (outcome.kind !== 'unavailable') await this.circuits.answered(accountId, task.account_failing);
    return outcome;
  }

  /** Best effort: a provider that cannot stop the task now lets it run out on its own. */
  private async stopAtProvider(account: ProviderAccount, taskId: string, route: ModelRoute | null): Promise<void> {
    const adapter = this.adapters.of(account.kind);
    await adapter.cancel?.(account, taskId, route ?? undefined).catch((error: unknown) => {
      this.services.log.info({ err: error, taskId }, 'the provider did not stop a timed-out task');
    });
  }

  /** The next poll by the pacing, or `afterMs` from now (a backoff, a deferral while the account's circuit is open). */
  private async later(task: DuePoll, afterMs: number | null = null): Promise<void> {
    const { db, config } = this.services;
    const settings = config.generations;
    await schedulePoll(db, task.id, { ...pollPacing(settings), leaseS: settings.slotLeaseS, afterMs });
  }

  private async fail(task: DuePoll, errorCode: string): Promise<void> {
    const { db, boss, log } = this.services;
    const failed = await db.transaction((trx) => failGeneration(trx, boss, { generationId: task.id, from: 'processing', errorCode }));
    if (failed) {
      log.info({ generationId: task.id, errorCode }, 'generation failed');
      this.onSlotReleased();
    }
  }

  /**
   * The provider is done (its slot is back in the pool already): the result is copied into our
   * storage under its real format (a text task's answer is kept on the row). An image's preview is
   * made here from the bytes in hand and the generation succeeds in the same transaction as the
   * record of its result, as does a text answer; a video's preview (ffmpeg, seconds) is left to the
   * media role. A download that fails is tried again at the next poll (until the provider
   * timeout); a file that is not a real image or video (or UTF-8 text) is `result_rejected`. A crash
   * before the commit leaves the poll claim to run out: the next poll copies the result again.
   */
  private async copyResult(adapter: ProviderAdapter, task: DuePoll, url: string): Promise<void> {
    const { db, log, config } = this.services;
    // A download may outlast the poll claim: a heartbeat keeps it while this process lives, and a
    // crashed worker's claim still runs out within POLL_CLAIM_S.
    const claimS = config.generations.pollClaimS;
    const heartbeat = setInterval(() => {
      extendPollClaim(db, task.id, claimS).catch((error: unknown) => log.warn({ err: error, generationId: task.id }, 'could not extend a poll claim'));
    }, (claimS * 1000) / 3);
    try {
      let body: Buffer;
      try {
        ({ body } = await adapter.fetchResult(url));
      } catch (error) {
        if (error instanceof ResultTooLargeError) return await this.fail(task, 'result_rejected');
        log.warn({ err: error, generationId: task.id }, 'result download failed; polling again');
        return await this.later(task, await this.circuits.pollFailed(task.provider_account_id!));
      }
      await this.storeKept(task, await this.keptResult(task, body));
    } finally {
      clearInterval(heartbeat);
    }
  }

  /**
   * Records a kept result: a video's waits for its preview (the media role), any other succeeds in
   * the same transaction. No usable result (null) is `result_rejected`.
   */
  private async storeKept(task: DuePoll, kept: KeptResult | null): Promise<void> {
    if (!kept) return await this.fail(task, 'result_rejected');
    const { db, boss, log, config } = this.services;
    const stored = await db.transaction((trx) => (task.output_type === 'video'
      ? markResultStored(trx, boss, { generationId: task.id, ...kept.result })
      : succeedWithResult(trx, boss, { generationId: task.id, preview: kept.preview, ...kept.result }, earningTerms(config))));
    if (!stored) log.info({ generationId: task.id }, 'result already stored by another worker');
  }

  /**
   * A file copied into our storage under its real format, or a text task's answer; null when the
   * result is unusable. Once its header is read, an image's copy is written while its preview is
   * made and stored: a lone generation waits for the longer of these, not their sum (a text answer
   * and a video have no preview here).
   */
  private async keptResult(task: DuePoll, body: Buffer): Promise<KeptResult | null> {
    if (task.output_type === 'text') {
      const text = resultText(body);
      return text === null ? null : { result: { text }, preview: null };
    }
    const file = await resultFileType(body, task.output_type);
    if (!file) return null;
    const { imageSize } = file;
    const [key, preview] = await Promise.all([
      storeResult(this.services.storage, task, body, file.type),
      imageSize ? storePreview(this.services, task, async (storeThumb) => imagePreview(await previewImages(body, storeThumb), imageSize)) : null,
    ]);
    return { result: { key, contentType: file.type.contentType }, preview };
  }
}
