import { randomUUID } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import pLimit from 'p-limit';
import type { Logger } from '../../common/logger';
import { exchange, isSuccess } from '../../clients/outbound-http';
import { AccountSlots, type Slot } from './account-slots';
import { takeExpired } from './expiry-queue';
import { BadInputImageError, decodeStill, readPhotos, takePhoto, type ModelInput, type Still, type TakenPhoto } from './input-photo';
import { modelBehaviour, type ModelBehaviour } from './models';
import { StagedFiles, type KeptFile } from './staged-files';

/**
 * The simulated provider's work, whatever protocol a front speaks (`native-front.ts`,
 * `replicate-front.ts`, `fal-front.ts`): accounts and their concurrency caps, tasks that read their
 * photos as a provider does, run a model for the latency and keep its result, the file store, the
 * callbacks (tried again after a 5xx or a network error), retention and the counters.
 */
export interface EngineSettings {
  latencyMs: number;
  failureRate: number;
  accounts: Map<string, number> | null;
  defaultConcurrency: number;
  resultTtlMs: number;
  fileTtlMs: number;
  log: Logger | undefined;
}

export interface ProviderSimulatorStats {
  /** Tasks holding a slot, by API key. */
  running: Record<string, number>;
  /** Tasks created. */
  submitted: number;
  completed: number;
  rejectedBusy: number;
  /**
   * Per accepted submission that took a slot an earlier task had freed: ms from that task's end to
   * this submission (slot time the caller wasted), in order.
   */
  slotGapsMs: number[];
  /**
   * Per task callback answered `2xx`: ms from the task's end to the answer (the caller's part of a
   * slot's hand-over before its own submission, in `slotGapsMs`), in order.
   */
  callbackAnswersMs: number[];
  /**
   * Per accepted submission: ms from its arrival to the start of its latency (the photos read and
   * the first one's header checked, as a provider takes a task): slot time that is the provider's own.
   */
  inputReadsMs: number[];
  /** When the latest task ended (epoch ms), null before any: the end of the provider's own work. */
  lastCompletedAt: number | null;
  /** When each task ended (epoch ms), in order: a pool's pace cycle by cycle. */
  completedAtMs: number[];
  /**
   * Submissions of a client reference that already had a task: answered with that task, as an
   * idempotent provider does; a provider without idempotency would have run (and billed) it twice.
   */
  repeatedSubmissions: number;
  /**
   * Tasks created for what already had a task, on any account: the same client reference, or the
   * same webhook address (Replicate and fal keep no reference; the caller's webhook names what the
   * task is for). Each one ran, and was billed, a second time.
   */
  secondTasks: number;
  /** Result files served (a caller that copies each result once downloads it once). */
  resultsServed: number;
  /** Task callbacks POSTed, each try counted (a callback answered `5xx` is tried again). */
  callbackCalls: number;
  /** Tasks shown to their account while they ran or after: the caller's polls. */
  polls: number;
  /** Files uploaded to the file store. */
  filesStaged: number;
  /** Task inputs read from the provider's own file store instead of downloaded. */
  stagedInputsRead: number;
  /** Results the models rendered: a light model's halfway through the task's latency, or before the answer when there is none. */
  rendered: number;
  /** Tasks a caller canceled while they ran. */
  canceled: number;
}

export type TaskOutcome =
  /** `text`: a text model's answer, the file's content, for the fronts that answer it inline. */
  | { status: 'succeeded'; result: { fileName: string; filePath: string; contentType: string; text?: string } }
  | { status: 'failed'; error: { type: string; message: string } }
  | { status: 'canceled' };

/** A finished task's call to its caller, as its front words it (built once: a retry sends the same). */
export interface Callback {
  url: string;
  body: string;
  headers: Record<string, string>;
}

export interface Task {
  id: string;
  apiKey: string;
  clientReference: string | null;
  /** What the task is for, as the provider can tell (`originOf`); null when nothing names it. */
  origin: string | null;
  model: string;
  /** Its photos read: the latency starts (epoch ms). */
  createdAt: number;
  finishedAt: number | null;
  slot: Slot;
  /** What the front keeps of the request to show it again (Replicate's input and webhook, fal's app). */
  front: Record<string, unknown>;
  /** The call made when the task ends, as real providers' webhooks do; null for none. */
  callback: ((task: Task) => Callback) | null;
  state: { status: 'running' } | TaskOutcome;
  /** When its other steps happened here, for a benchmark's breakdown of a generation's time. */
  times: Omit<TaskTimes, 'started' | 'finished'>;
}

/** Epoch ms of a task's steps at the provider; null before the step. */
export interface TaskTimes {
  /** The submission arrived (before its photos were read). */
  received: number;
  /** Its photos read: the latency starts (the task's `createdAt`). */
  started: number;
  /** The task's `finishedAt`. */
  finished: number | null;
  /** Its callback answered `2xx`. */
  calledBack: number | null;
  /** The last time a caller read its state. */
  polled: number | null;
  /** Its result file served. */
  resultServed: number | null;
}

export interface TaskRequest {
  model: string;
  /** The links the model reads, in order (the first is its photo). */
  photoUrls: string[];
  prompt: string;
  clientReference: string | null;
  /** The address its callback goes to, when the caller gave one. */
  webhookUrl: string | null;
  front: Record<string, unknown>;
  callback: ((task: Task) => Callback) | null;
}

export type StartOutcome =
  | { kind: 'accepted'; task: Task }
  /** The account already has a task of that client reference. */
  | { kind: 'repeated'; task: Task }
  | { kind: 'busy'; retryAfterS: number }
  | { kind: 'no_model' }
  | { kind: 'needs_photo' }
  | { kind: 'bad_input_image'; message: string };

/** Before each attempt of a task callback. */
const callbackBackoffMs = [0, 50, 250];
/** Heavy renders (video encodes) run a few at a time, so a load test leaves the machine usable. */
const HEAVY_RENDERS = Math.max(1, Math.floor(os.availableParallelism() / 2));

export class TaskEngine {
  private readonly lifetime = new AbortController();
  private readonly slots = new AccountSlots();
  private readonly tasks = new Map<string, Task>();
  /** Tasks by API key and client reference (`referenceKey`). */
  private readonly byReference = new Map<string, Task>();
  /** The latest task of each origin (`Task.origin`), whichever account ran it. */
  private readonly byOrigin = new Map<string, Task>();
  /** Finished tasks in completion order, which is also their expiry order. */
  private readonly expiring: { task: Task; expiresAt: number }[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  private readonly heavyRenders = pLimit(HEAVY_RENDERS);
  private readonly sweeper: NodeJS.Timeout;
  private readonly counts = { submitted: 0, completed: 0, rejectedBusy: 0, repeatedSubmissions: 0, secondTasks: 0, resultsServed: 0, callbackCalls: 0, polls: 0, filesStaged: 0, stagedInputsRead: 0, rendered: 0, canceled: 0 };
  readonly files: StagedFiles;
  /** By API key: when each freed slot became free, oldest first, until a submission takes it. */
  private readonly freedAt = new Map<string, number[]>();
  private readonly slotGapsMs: number[] = [];
  private readonly callbackAnswersMs: number[] = [];
  private readonly inputReadsMs: number[] = [];
  private readonly completedAtMs: number[] = [];
  private lastCompletedAt: number | null = null;
  /** The simulator's address: result and file links start with it. */
  url = '';

  constructor(
    readonly settings: EngineSettings,
    private readonly dir: string,
  ) {
    this.files = new StagedFiles(path.join(dir, 'files'), settings.fileTtlMs);
    this.sweeper = setInterval(() => this.sweep(), Math.max(10, Math.min(settings.resultTtlMs, settings.fileTtlMs, 60_000))).unref();
  }

  stats(): ProviderSimulatorStats {
    return { running: this.slots.running(), ...this.counts, slotGapsMs: [...this.slotGapsMs], callbackAnswersMs: [...this.callbackAnswersMs], inputReadsMs: [...this.inputReadsMs], completedAtMs: [...this.completedAtMs], lastCompletedAt: this.lastCompletedAt };
  }

  /** A caller read the task's state (a poll). */
  polled(task: Task): void {
    this.counts.polls += 1;
    task.times.polled = Date.now();
  }

  /** The result file of a task was served. */
  resultServed(fileName: string): void {
    this.counts.resultsServed += 1;
    const task = this.tasks.get(fileName.split('.')[0]);
    if (task) task.times.resultServed = Date.now();
  }

  /** The steps of the tasks of a client reference (any account), oldest first. */
  timesOf(clientReference: string): TaskTimes[] {
    return [...this.tasks.values()].filter((task) => task.clientReference === clientReference)
      .sort((a, b) => a.createdAt - b.createdAt).map((task) => ({ ...task.times, started: task.createdAt, finished: task.finishedAt }));
  }

  /** Stops the work under way; the caller closes its server first. */
  async stop(): Promise<void> {
    this.lifetime.abort();
    clearInterval(this.sweeper);
    // Work still running may start more (a submission schedules its task's completion).
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    await rm(this.dir, { recursive: true, force: true });
  }

  track(work: Promise<void>): void {
    this.inFlight.add(work);
    const forget = () => this.inFlight.delete(work);
    work.then(forget, forget);
  }

  /** The API key when the simulator knows it, else null. */
  authenticate(apiKey: string | null): string | null {
    if (apiKey === null) return null;
    const { accounts } = this.settings;
    return accounts === null || accounts.has(apiKey) ? apiKey : null;
  }

  task(id: string, apiKey: string): Task | null {
    const task = this.tasks.get(id);
    return task && task.apiKey === apiKey ? task : null;
  }

  taskOfReference(apiKey: string, clientReference: string): Task | null {
    return this.byReference.get(referenceKey(apiKey, clientReference)) ?? null;
  }

  /** The account's tasks still kept, newest first (Replicate's list). */
  tasksOf(apiKey: string): Task[] {
    return [...this.tasks.values()].filter((task) => task.apiKey === apiKey).sort((a, b) => b.createdAt - a.createdAt);
  }

  resultUrl(fileName: string): string {
    return `${this.url}/results/${fileName}`;
  }

  /** The task whose result file this is, when it succeeded and is kept. */
  result(fileName: string): { filePath: string; contentType: string } | null {
    const state = this.tasks.get(fileName.split('.')[0])?.state;
    return state?.status === 'succeeded' && state.result.fileName === fileName ? state.result : null;
  }

  async stage(body: Buffer, contentType: string, id?: string): Promise<KeptFile> {
    const file = await this.files.put(body, contentType, id);
    this.counts.filesStaged += 1;
    return file;
  }

  /**
   * Takes a task as a provider does: the account's cap checked, its photos read (staged ones from
   * the file store) and the first one's header checked, then the model runs for the latency.
   */
  async start(apiKey: string, request: TaskRequest): Promise<StartOutcome> {
    const repeated = this.repeated(apiKey, request.clientReference);
    if (repeated) return repeated;
    const behaviour = modelBehaviour(request.model);
    if (!behaviour) return { kind: 'no_model' };
    if (behaviour.kind === 'renders' && behaviour.needsPhoto && request.photoUrls.length === 0) return { kind: 'needs_photo' };

    const { latencyMs } = this.settings;
    const slot = this.slots.acquire(apiKey, this.capOf(apiKey), Date.now() + latencyMs);
    if (!slot) {
      this.counts.rejectedBusy += 1;
      return { kind: 'busy', retryAfterS: this.slots.retryAfterS(apiKey, Date.now()) };
    }
    const freed = this.freedAt.get(apiKey)?.shift();
    if (freed !== undefined) this.slotGapsMs.push(Date.now() - freed);
    const arrivedAt = Date.now();
    let photo: TakenPhoto | null = null;
    try {
      const photos = await readPhotos(request.photoUrls, this.lifetime.signal, (url) => this.stagedInput(url));
      if (photos.length) photo = await takePhoto(photos[0]);
    } catch (error) {
      const judged = error instanceof BadInputImageError && behaviour.kind === 'renders' && behaviour.judgesPhotos;
      if (!judged) {
        this.slots.release(slot);
        if (error instanceof BadInputImageError) return { kind: 'bad_input_image', message: error.message };
        throw error;
      }
    }
    // The same reference may have been submitted again while these photos downloaded.
    const again = this.repeated(apiKey, request.clientReference);
    if (again) {
      this.slots.release(slot);
      return again;
    }

    const task: Task = {
      id: randomUUID(),
      apiKey,
      clientReference: request.clientReference,
      origin: originOf(request),
      model: request.model,
      createdAt: Date.now(),
      finishedAt: null,
      slot,
      front: request.front,
      callback: request.callback,
      state: { status: 'running' },
      times: { received: arrivedAt, calledBack: null, polled: null, resultServed: null },
    };
    slot.finishAt = Date.now() + latencyMs;
    this.inputReadsMs.push(Date.now() - arrivedAt);
    this.tasks.set(task.id, task);
    if (task.clientReference !== null) this.byReference.set(referenceKey(apiKey, task.clientReference), task);
    if (task.origin !== null) {
      if (this.byOrigin.has(task.origin)) this.counts.secondTasks += 1;
      this.byOrigin.set(task.origin, task);
    }
    this.counts.submitted += 1;
    const input = { photo, prompt: request.prompt };
    // With no latency a light render is done before answering, so that the task is finished at its
    // first poll. Otherwise it runs halfway through the latency, as a model runs on the provider's
    // machines; the photo's pixels are decoded then too, only its header at the submission. Done at
    // the submission, this process's CPU landed where the caller hands its freed slots over, on the
    // same cores, which a real provider never does.
    const heavy = behaviour.kind === 'renders' && behaviour.heavy;
    const outcome = !heavy && latencyMs > 0
      ? delay(latencyMs / 2, undefined, { signal: this.lifetime.signal }).then(() => this.produce(task, behaviour, input), () => failed('internal_error', 'the provider stopped'))
      : this.produce(task, behaviour, input);
    if (!heavy && latencyMs === 0) await outcome;
    this.track(this.finish(task, outcome));
    return { kind: 'accepted', task };
  }

  /** Stops a running task (its slot freed, its callback made); false when it had already ended. */
  cancel(task: Task): boolean {
    if (task.state.status !== 'running') return false;
    this.counts.canceled += 1;
    this.end(task, { status: 'canceled' });
    return true;
  }

  /** A task input that names a staged file (`.../files/{id}` of this simulator): its bytes from the store; null for any other link. */
  private stagedInput(url: string): Promise<Buffer> | null {
    const id = url.startsWith(this.url) ? /\/files\/([0-9a-f-]{36})$/.exec(url)?.[1] : undefined;
    if (id === undefined) return null;
    this.counts.stagedInputsRead += 1;
    return this.files.read(id);
  }

  private repeated(apiKey: string, clientReference: string | null): StartOutcome | null {
    const task = clientReference === null ? null : this.taskOfReference(apiKey, clientReference);
    if (!task) return null;
    this.counts.repeatedSubmissions += 1;
    return { kind: 'repeated', task };
  }

  /**
   * The model's run: the photo decoded into its still (pixels that turn out broken fail the task as
   * `bad_input_image`, or reach a model that judges photos as no still), then the render.
   */
  private async produce(task: Task, behaviour: ModelBehaviour, { photo, prompt }: { photo: TakenPhoto | null; prompt: string }): Promise<TaskOutcome> {
    if (Math.random() < this.settings.failureRate) return failed('internal_error', 'simulated provider failure');
    if (behaviour.kind === 'fails') return failed(behaviour.errorType, behaviour.message);
    let still: Still | null = null;
    try {
      if (photo) still = await decodeStill(photo);
    } catch (error) {
      // decodeStill throws BadInputImageError only.
      if (!behaviour.judgesPhotos) return failed('bad_input_image', (error as BadInputImageError).message);
    }
    const input: ModelInput = { still, prompt };
    const fileName = `${task.id}.${behaviour.extension}`;
    const filePath = path.join(this.dir, fileName);
    const signal = this.lifetime.signal;
    try {
      if (behaviour.heavy) await this.heavyRenders(() => behaviour.render(input, filePath, signal));
      else await behaviour.render(input, filePath, signal);
      this.counts.rendered += 1;
      const text = behaviour.answersText ? { text: await readFile(filePath, 'utf8') } : {};
      return { status: 'succeeded', result: { fileName, filePath, contentType: behaviour.contentType, ...text } };
    } catch (error) {
      if (!signal.aborted) this.settings.log?.warn({ err: error, taskId: task.id }, 'simulated model failed to render');
      return failed('internal_error', 'the model failed to render');
    }
  }

  private async finish(task: Task, outcome: Promise<TaskOutcome>): Promise<void> {
    const state = await outcome;
    const wait = task.slot.finishAt - Date.now();
    if (wait > 0) await delay(wait, undefined, { signal: this.lifetime.signal }).catch(() => undefined);
    if (this.lifetime.signal.aborted || task.state.status !== 'running') {
      if (state.status === 'succeeded' && task.state.status === 'canceled') await rm(state.result.filePath, { force: true });
      return;
    }
    this.end(task, state);
  }

  private end(task: Task, state: TaskOutcome): void {
    task.state = state;
    this.slots.release(task.slot);
    const freed = this.freedAt.get(task.apiKey) ?? [];
    this.freedAt.set(task.apiKey, freed);
    const finishedAt = Date.now();
    task.finishedAt = finishedAt;
    freed.push(finishedAt);
    this.lastCompletedAt = finishedAt;
    this.completedAtMs.push(finishedAt);
    this.expiring.push({ task, expiresAt: Date.now() + this.settings.resultTtlMs });
    this.counts.completed += 1;
    if (!task.callback) return;
    const callback = task.callback(task);
    this.track(this.callBack(task, callback).then((answered) => {
      if (!answered) return;
      task.times.calledBack = Date.now();
      this.callbackAnswersMs.push(task.times.calledBack - finishedAt);
    }));
  }

  /** POSTs the finished task to its callback URL; a 5xx or a network error is tried again, twice. True when it was answered `2xx`. */
  private async callBack(task: Task, { url, body, headers }: Callback): Promise<boolean> {
    for (const [attempt, backoffMs] of callbackBackoffMs.entries()) {
      if (backoffMs) await delay(backoffMs, undefined, { signal: this.lifetime.signal }).catch(() => undefined);
      if (this.lifetime.signal.aborted) return false;
      this.counts.callbackCalls += 1;
      try {
        const { status } = await exchange(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body,
          timeoutMs: 5000,
          signal: this.lifetime.signal,
        });
        const ok = isSuccess(status);
        if (status < 500) {
          if (!ok) this.settings.log?.warn({ taskId: task.id, status }, 'task callback refused');
          return ok;
        }
      } catch (error) {
        if (this.lifetime.signal.aborted) return false;
        if (attempt === callbackBackoffMs.length - 1) this.settings.log?.warn({ err: error, taskId: task.id }, 'task callback failed');
      }
    }
    return false;
  }

  private sweep(): void {
    const now = Date.now();
    this.files.sweep(now, (error) => this.settings.log?.warn({ err: error }, 'could not delete a staged file'));
    for (const { task } of takeExpired(this.expiring, now)) {
      this.tasks.delete(task.id);
      if (task.clientReference !== null) this.byReference.delete(referenceKey(task.apiKey, task.clientReference));
      if (task.origin !== null && this.byOrigin.get(task.origin) === task) this.byOrigin.delete(task.origin);
      if (task.state.status === 'succeeded') {
        rm(task.state.result.filePath, { force: true }).catch((error: unknown) => this.settings.log?.warn({ err: error }, 'could not delete a result'));
      }
    }
  }

  private capOf(apiKey: string): number {
    return this.settings.accounts?.get(apiKey) ?? this.settings.defaultConcurrency;
  }
}

function failed(type: string, message: string): TaskOutcome {
  return { status: 'failed', error: { type, message } };
}

/**
 * What a task is for: its client reference, else its webhook's address without the query (a signed
 * link's expiry and signature change from one submission to the next; its path names the work).
 */
function originOf({ clientReference, webhookUrl }: TaskRequest): string | null {
  if (clientReference !== null) return clientReference;
  const link = webhookUrl === null ? null : URL.parse(webhookUrl);
  return link ? `${link.origin}${link.pathname}` : null;
}

function referenceKey(apiKey: string, clientReference: string): string {
  return `${apiKey}\n${clientReference}`;
}
