import { claimInputChecks, type InputCheck } from '../../db/generations/claim-input-checks';
import { uncheckedInputs } from '../../db/generations/unchecked-inputs';
import { claimNextWithSlots, type ClaimWithSlot } from '../../db/generations/claim-next-with-slots';
import { failGeneration } from '../../db/generations/fail-generation';
import { forgetStagedInputs } from '../../db/generations/forget-staged-inputs';
import { leaveSubmissionUnresolved } from '../../db/generations/leave-submission-unresolved';
import { markInputsChecked, type StagedInputs } from '../../db/generations/mark-inputs-checked';
import { markProcessing } from '../../db/generations/mark-processing';
import { pollPacing } from '../../db/generations/schedule-poll';
import { providerTaskOf } from '../../db/generations/provider-task-of';
import { releaseSubmissionClaim } from '../../db/generations/release-submission-claim';
import { finishSubmitJob, returnSubmitJob } from '../../db/generations/submit-ticket';
import type { ProviderKind } from '../../common/model-route';
import { untilReachable } from '../../db/unreachable';
import type { AccountKeys } from '../../pool/accounts';
import { coolDownAccount } from '../../db/pool/cool-down-account';
import type { Lease } from '../../db/pool/lease-slots';
import type { FileToStage, StagedFile, StageOutcome, SubmitOutcome } from '../../clients/providers/adapter';
import type { ProviderAdapters } from '../../clients/providers/registry';
import { taskCallbackUrl } from '../../clients/providers/task-callback';
import { releaseSlotLease } from '../../db/pool/release-slot-lease';
import type { AccountCircuits } from '../../pool/account-circuits';
import type { RunningPart, Services } from '../../services';
import { startJobLoop } from '../runtime/job-loop';
import type { Wakeup } from '../runtime/wakeup';
import type { HandOverFirst } from './hand-over-first';
import { readInputPhotos, unusableInputPhoto } from './input-photos';

/** How long the provider may take to download the photos from their presigned links. */
const inputLinkTtlS = 3600;
/** A task callback stays valid this long past the provider timeout (a late callback still saves a poll). */
const callbackGraceS = 300;
/** Photo checks ahead of the slot that one process runs at once. */
const checksAhead = 4;
/** How long a photo read begun ahead of a claim is kept for the submission that may follow. */
const readAheadKeptMs = 10_000;

/** Uploads one photo to the file store of a kind's provider with the key files are staged with. */
type StageFile = (file: FileToStage) => Promise<StageOutcome>;

/**
 * The dispatcher, one per worker process, on the job loop. A round is ONE transaction
 * (`claim-next-with-slots.ts`), for every provider kind this process has keys for: the free slots of
 * each kind (of the accounts this process has keys for), as many tickets of that kind's line
 * (`generation-submit.<kind>`, oldest first: FIFO), their generations claimed with the attempt
 * recorded before the provider is called, the slots leased and the tickets started; a crash leaves
 * it done or not at all. Then each submission runs on its own, sent with the generation's id as
 * client reference. It never sleeps while a provider works and never submits without a lease: when
 * every slot is taken, generations simply wait as `pending` (backpressure, no provider 429s).
 *
 * A submission whose answer is lost is never sent again blind: an accepted task is recorded even
 * across a database blip, and one that may or may not have reached the provider is left to the
 * sweeps, which look it up by its client reference (`sweeps.ts`).
 *
 * Wakes at once when a generation is created (NOTIFY), when a slot is released in this process or
 * by a provider's callback (NOTIFY), and otherwise every DISPATCH_TICK_MS.
 */
export async function startDispatcher(
  services: Services,
  adapters: ProviderAdapters,
  keys: AccountKeys,
  wiring: {
    /** Each account's backoff and circuit: a submission the provider did not answer counts against its account. */
    circuits: AccountCircuits;
    wakeup: Wakeup;
    /** Where the rounds and submissions are tracked, for the poll loop to let them go first (and a lull after). */
    handOverFirst: HandOverFirst;
    /** Called when a generation became `processing` here, with the ms until its first poll, so the poll loop looks at it then. */
    onSubmitted: (firstPollInMs: number) => void;
    /** The sweeps: each round starts them (they limit themselves to their interval) unless they still run. */
    sweep: () => Promise<void>;
  },
): Promise<RunningPart> {
  const dispatcher = new Dispatcher(services, adapters, keys, { ...wiring, slotReturned: () => wiring.wakeup.wake() });
  const stopReadingAhead = await services.listenHub.subscribe('generation_status', null, {
    notify: (event) => {
      // Photos whose headers the API read are not read again (`photo_headers_checked`).
      if (event.status === 'pending' && typeof event.id === 'string' && event.photo_headers_checked !== true) dispatcher.readAhead(event.id);
    },
    resync: () => undefined,
  });
  const loop = await startJobLoop(services, {
    name: 'dispatch',
    concurrency: services.config.generations.submitConcurrency,
    idleMs: services.config.generations.dispatchTickMs,
    claim: (room) => wiring.handOverFirst.track(dispatcher.round(room)),
    handle: (submission) => wiring.handOverFirst.handOver(dispatcher.submit(submission)),
    // Again at once only when the round may have left a free slot and a waiting generation behind:
    // one that filled every slot it counted did not (a slot freed since comes with its own wake-up).
    nextRoundInMs: ({ roomLeft }) => (dispatcher.moreMayWait && roomLeft > 0 ? 0 : services.config.generations.dispatchTickMs),
    // A new generation, or a slot the provider's callback freed in any process while generations
    // may wait for one (with none waiting, a freed slot has no one to go to: no round).
    wakeOn: [{ channel: 'generation_status', when: (event) => event.status === 'pending' }, { channel: 'provider_task_done', when: () => wiring.handOverFirst.lineMayWait }],
    wakeup: wiring.wakeup,
    // A submission that ends on its slot changes nothing for the next round: only one that gave its
    // slot back wakes the loop (\`slotReturned\`), so no empty round runs ahead of a slot's hand-over.
    roundAfterItem: 'whenFull',
  });
  return {
    stop: async () => {
      stopReadingAhead();
      await loop.stop();
      await dispatcher.stopBeside();
    },
  };
}

class Dispatcher {
  /** The work running beside the rounds: the sweeps, the photo checks ahead and their claim. */
  private beside = new Set<Promise<void>>();
  private sweeping = false;
  /** The last round may have left a free slot and a waiting generation behind. */
  moreMayWait = false;
  private checksRunning = 0;
  private claimingChecks = false;
  /** The last claim of checks found all it asked for: more photos may wait unread. */
  private moreToCheck = false;
  /** The last round found every slot taken: waiting generations may be checked ahead meanwhile. */
  private saturated = false;
  private stopping = false;
  /** Per provider kind, null when its photos are not staged (no file store, or PROVIDER_FILE_STORE=0). */
  private readonly stageFiles: Map<ProviderKind, StageFile | null>;
  /**
   * Photo reads begun ahead of their generation's claim (`readAhead`), by generation id: what is
   * wrong with a photo or null, or undefined when it was not read (no longer an unchecked pending).
   */
  private readonly readsAhead = new Map<string, Promise<string | null | undefined>>();
  /**
   * A read ahead runs: one at a time, as a lone generation needs, so that a burst of new ones (each
   * NOTIFY arriving before any round has seen the line) does not become as many reads and statements
   * beside the rounds.
   */
  private readingAhead = false;

  constructor(
    private readonly services: Services,
    private readonly adapters: ProviderAdapters,
    private readonly keys: AccountKeys,
    private readonly wiring: {
      circuits: AccountCircuits;
      onSubmitted: (firstPollInMs: number) => void;
      sweep: () => Promise<void>;
      /** A claimed slot went back to the pool (failed, back in line, or the task runs elsewhere). */
      slotReturned: () => void;
      /** The rounds and submissions, which the photo checks ahead let go first (and a lull after them). */
      handOverFirst: HandOverFirst;
    },
  ) {
    this.stageFiles = new Map(keys.kinds.map((kind) => {
      const adapter = adapters.of(kind);
      const stageFile = adapter.stageFile?.bind(adapter);
      const fileKey = services.config.generations.providerFileStore ? keys.fileKey(kind) : null;
      return [kind, stageFile && fileKey ? (file: FileToStage) => stageFile(fileKey, file) : null];
    }));
  }

  /**
   * One round: up to `room` submissions claimed. The sweeps and the photo checks ahead run beside
   * the rounds, never delaying the hand-over of a slot.
   */
  async round(room: number): Promise<ClaimWithSlot[]> {
    this.startSweeps();
    const submissions = await this.claimSubmissions(room);
    if (this.saturated) this.startChecksAhead();
    return submissions;
  }

  /** Starts nothing more beside the rounds and waits for what runs. */
  async stopBeside(): Promise<void> {
    this.stopping = true;
    while (this.beside.size) await Promise.allSettled([...this.beside]);
  }

  /**
   * A new generation while the line was empty: its photos' headers are read now, while the round's
   * transaction claims it, rather than after the claim (a lone generation would wait for both, one
   * after the other). Every idle worker reads them; the one that claims the generation uses its
   * read, the others drop theirs. A line with generations waiting reads nothing ahead (the new one
   * is not next), and neither does a process whose read ahead still runs.
   */
  readAhead(generationId: string): void {
    if (this.stopping || this.wiring.handOverFirst.lineMayWait || this.readingAhead || this.readsAhead.has(generationId)) return;
    const { db, storage } = this.services;
    this.readingAhead = true;
    // A read that failed counts as none: the submission reads the photos itself.
    const read = uncheckedInputs(db, generationId)
      .then((inputs) => (inputs === null ? undefined : unusableInputPhoto(storage, inputs)))
      .catch(() => undefined)
      .finally(() => {
        this.readingAhead = false;
      });
    this.readsAhead.set(generationId, read);
    setTimeout(() => this.readsAhead.delete(generationId), readAheadKeptMs).unref();
    this.runBeside(read.then(() => undefined));
  }

  /** What is wrong with one of the generation's photos, or null: as read ahead when it was, else read now. */
  private async unusablePhoto(generation: ClaimWithSlot['generation']): Promise<string | null> {
    const readAhead = this.readsAhead.get(generation.id);
    this.readsAhead.delete(generation.id);
    const unusable = await readAhead;
    return unusable === undefined ? unusableInputPhoto(this.services.storage, generation.inputs) : unusable;
  }

  private startSweeps(): void {
    if (this.sweeping) return;
    this.sweeping = true;
    this.runBeside(this.wiring.sweep()
      .catch((error: unknown) => this.services.log.error({ err: error }, 'generation sweeps failed'))
      .finally(() => {
        this.sweeping = false;
      }));
  }

  private async claimSubmissions(room: number): Promise<ClaimWithSlot[]> {
    const { db, config } = this.services;
    this.moreMayWait = false;
    if (room <= 0) {
      this.wiring.handOverFirst.lineMayWait = true;
      return [];
    }
    const leaseS = config.generations.slotLeaseS;
    const { claims, passedOver, waiting, freeSlots } = await claimNextWithSlots(db, this.services.boss, room, {
      claimS: leaseS, leaseS, processId: this.services.processSession.id, knownAccounts: this.keys.fingerprints, kinds: this.keys.kinds,
      probeHoldMs: config.generations.providerRetry.capMs,
    });
    // Fewer free slots than waiting tickets: every slot is taken, the waiting ones may be checked ahead.
    this.saturated = freeSlots < waiting;
    // Progress, with a ticket passed over or as many free slots as room (more may be free): look
    // again at once (a round that took nothing waits, so a ticket under a stalled worker's live
    // claim cannot spin it). A round that took every free slot it found waits for the next wake-up.
    this.moreMayWait = claims.length > 0 && (passedOver > 0 || freeSlots === room);
    // `waiting` counts at most `room`: as many as that may mean more behind them.
    this.wiring.handOverFirst.lineMayWait = waiting > claims.length || waiting >= room;
    return claims;
  }

  /**
   * While every slot is busy, the photos of the next waiting generations are read here: a broken or
   * oversized one fails at once (refunded) instead of at the head of the line, and a checked one is
   * later submitted without reading its photos again. Where the provider has a file store, the
   * photos are staged there too: its task then starts without downloading them, which would
   * otherwise take slot time. Checks never hold a slot.
   */
  private startChecksAhead(): void {
    if (this.stopping || this.claimingChecks || this.checksRunning >= checksAhead) return;
    this.claimingChecks = true;
    const claiming = this.checkAhead()
      .catch((error: unknown) => this.services.log.warn({ err: error }, 'could not claim photo checks ahead of the slot'))
      .finally(() => {
        this.claimingChecks = false;
      });
    this.runBeside(claiming);
  }

  private runBeside(work: Promise<void>): void {
    this.beside.add(work);
    void work.finally(() => this.beside.delete(work));
  }

  private async checkAhead(): Promise<void> {
    const { db, log, config } = this.services;
    // The submissions just claimed read their photos from storage and the provider downloads them:
    // the next ones' photos are read after, not against them.
    await this.wiring.handOverFirst.handOversDone();
    if (this.stopping) return;
    const wanted = checksAhead - this.checksRunning;
    const claimed = await claimInputChecks(db, wanted, config.generations.slotLeaseS);
    this.moreToCheck = claimed.length === wanted;
    for (const generation of claimed) {
      const work = (async () => {
        try {
          await this.checkInputs(generation);
        } catch (error) {
          // The claim runs out; the dispatcher checks the photos itself at submission.
          log.warn({ err: error, generationId: generation.id }, 'photo check ahead of the slot failed');
        }
      })();
      this.checksRunning += 1;
      this.runBeside(work.finally(() => {
        this.checksRunning -= 1;
        // The next one at once, not at the next round: a round may be a tick away, and a slot freed
        // meanwhile would otherwise be handed a generation whose photos still have to be read.
        if (this.saturated && this.moreToCheck) this.startChecksAhead();
      }));
    }
  }

  /** Fails a generation with an unusable photo; marks the others checked, their photos staged where the provider can keep them. */
  private async checkInputs(generation: InputCheck): Promise<void> {
    const { db, storage } = this.services;
    const stageFile = this.stageFiles.get(generation.provider_kind) ?? null;
    if (!stageFile) {
      const unusable = await unusableInputPhoto(storage, generation.inputs);
      if (unusable) await this.fail(generation.id, 'bad_input_image', unusable);
      else await markInputsChecked(db, generation.id, null);
      return;
    }
    const photos = await readInputPhotos(storage, generation.inputs);
    if (typeof photos === 'string') await this.fail(generation.id, 'bad_input_image', photos);
    else await markInputsChecked(db, generation.id, await this.stage(stageFile, generation, photos));
  }

  /** The photos uploaded to the provider's file store; null when one could not be (our links are sent instead). */
  private async stage(stageFile: StageFile, { id, inputs }: InputCheck, photos: FileToStage[]): Promise<StagedInputs | null> {
    const outcomes = await Promise.all(photos.map(stageFile));
    const files: StagedFile[] = [];
    for (const outcome of outcomes) {
      if (outcome.kind !== 'staged') {
        this.services.log.warn({ generationId: id, reason: outcome.reason }, 'could not stage photos with the provider; its task will download them');
        return null;
      }
      files.push(outcome);
    }
    return {
      inputs: files.map((file, index) => ({ url: file.url, person: inputs[index].person })),
      until: new Date(Math.min(...files.map((file) => file.expiresAt.getTime()))),
    };
  }

  async submit(claim: ClaimWithSlot): Promise<void> {
    const { generation, lease, jobId } = claim;
    const { storage, log } = this.services;
    const context = { generationId: generation.id, accountId: lease.accountId, slot: lease.slotNo };
    let outcome: SubmitOutcome;
    try {
      const account = await this.keys.keyOf(lease.accountId);
      if (!account) return await this.fail(generation.id, 'lost_account', 'the leased account has no key in this process');
      const unusable = generation.inputs_checked ? null : await this.unusablePhoto(generation);
      if (unusable) return await this.fail(generation.id, 'bad_input_image', unusable);
      const inputs = generation.staged_inputs ?? await Promise.all(generation.inputs.map(async (input) => ({
        url: await storage.presignedGet(input.object_key, inputLinkTtlS),
        person: input.person,
      })));
      const prompt = generation.prompt === null ? {} : { prompt: generation.prompt };
      const request = { route: generation.route, inputs, ...prompt, clientReference: generation.id, callbackUrl: this.callbackUrl(generation.id, account.kind) };
      outcome = await this.adapters.of(account.kind).submit(account, request);
    } catch (error) {
      log.error({ err: error, ...context }, 'submission failed before reaching the provider; the generation waits');
      // If even this fails, the claim ends and the sweeps find no task for it and put it back in line.
      return await this.backInLine(claim).catch(() => undefined);
    }
    try {
      // An answer of any kind is the provider answering; no answer counts against the account.
      if (outcome.kind === 'unavailable') await this.wiring.circuits.failed(lease.accountId);
      else await this.wiring.circuits.answered(lease.accountId, claim.accountFailing);
      switch (outcome.kind) {
        case 'accepted':
          return await this.record(generation.id, lease, outcome.taskId, { kind: generation.provider_kind, jobId });
        case 'busy':
          log.info({ ...context, retryAfterS: outcome.retryAfterS }, 'provider account busy; cooling down');
          return await this.backInLine(claim, { coolDownS: outcome.retryAfterS });
        case 'rejected':
          // Photos the provider had taken and no longer has: tried again with our own links, which
          // decide (a photo the checks found usable is rarely the provider's real objection).
          if ((outcome.errorCode === 'bad_input_image' || outcome.mayBePhotos) && generation.staged_inputs) {
            log.warn({ ...context, reason: outcome.message }, 'the provider refused the photos staged with it; our links go next');
            return await this.backInLine(claim, { forgetStaged: true });
          }
          return await this.fail(generation.id, outcome.errorCode, outcome.message ?? 'refused by the provider');
        case 'unavailable':
          // The account backs off (its circuit tells once when the provider is down for good).
          if (!outcome.maybeAccepted) {
            log.info({ ...context, reason: outcome.reason }, 'provider unavailable; the generation waits');
            return await this.backInLine(claim);
          }
          log.warn({ ...context, reason: outcome.reason }, 'no answer to a submission; the sweeps look the task up');
          await leaveSubmissionUnresolved(this.services.db, generation.id, this.services.processSession.id);
      }
    } catch (error) {
      // The provider may hold a task for it: not put back in line from here (that could send it
      // twice); the claim ends and the sweeps look the task up by its client reference.
      log.error({ err: error, ...context }, 'could not record the outcome of a submission; the sweeps resolve it');
    }
  }

  /** The signed URL the provider calls when the task is done: valid as long as the provider may take. */
  private callbackUrl(generationId: string, kind: ProviderKind): string {
    const { config } = this.services;
    const expiresS = Math.ceil(Date.now() / 1000) + config.generations.providerTimeoutS + callbackGraceS;
    return taskCallbackUrl(config.providerCallbackBaseUrl, config.tokenSecret, generationId, expiresS, kind);
  }

  /**
   * The provider accepted: the generation is `processing`. The task exists from here on, so its
   * record is tried again until the database answers (within the claim): a blip must not cost a
   * second task. If the generation moved on meanwhile (recovery adopted this very task while this
   * worker looked dead, or it failed), the slot goes back unless the generation runs on it.
   */
  private async record(generationId: string, lease: Lease, taskId: string, ticket: { kind: ProviderKind; jobId: string }): Promise<void> {
    const { db, boss, log, config } = this.services;
    const started = await untilReachable(
      () => markProcessing(db, { generationId, accountId: lease.accountId, taskId }, pollPacing(config.generations)),
      config.generations.slotLeaseS * 1000,
    );
    if (started) {
      this.wiring.onSubmitted(started.firstPollInMs);
      // A ticket left unfinished comes back after pg-boss's expiry, and the next round finishes it.
      return await finishSubmitJob(boss, null, ticket.kind, ticket.jobId)
        .catch((error: unknown) => log.warn({ err: error, generationId }, 'could not finish the ticket of a submitted generation'));
    }
    if ((await providerTaskOf(db, generationId)) === taskId) return;
    log.warn({ generationId, taskId }, 'generation moved on before its submission was recorded; this task runs unwatched');
    if (await releaseSlotLease(db, lease)) this.wiring.slotReturned();
  }

  private async fail(generationId: string, errorCode: string, reason: string): Promise<void> {
    this.services.log.info({ generationId, errorCode, reason }, 'generation failed at submission');
    if (await this.services.db.transaction((trx) => failGeneration(trx, this.services.boss, { generationId, from: 'pending', errorCode }))) this.wiring.slotReturned();
  }

  /**
   * The submission did not happen: the slot goes back (and its account cools down after a 429, the
   * staged photos are forgotten after their refusal), the ticket back in line.
   */
  private async backInLine({ generation, lease, jobId }: ClaimWithSlot, after: { coolDownS?: number; forgetStaged?: boolean } = {}): Promise<void> {
    const { db, boss } = this.services;
    await db.transaction(async (trx) => {
      if (after.coolDownS !== undefined) await coolDownAccount(trx, lease.accountId, after.coolDownS);
      if (after.forgetStaged) await forgetStagedInputs(trx, generation.id);
      await releaseSlotLease(trx, lease);
      if (await releaseSubmissionClaim(trx, generation.id)) await returnSubmitJob(boss, trx, generation.provider_kind, jobId);
    });
    this.wiring.slotReturned();
  }
}
