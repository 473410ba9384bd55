import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import pLimit from 'p-limit';
import { listen } from '../../common/listen';
import type { Logger } from '../../common/logger';
import type { ProviderInput } from '../../clients/providers/adapter';
import { exchange, isSuccess } from '../../clients/outbound-http';
import { AccountSlots, type Slot } from './account-slots';
import { takeExpired } from './expiry-queue';
import { BadInputImageError, decodeStill, MAX_PHOTO_BYTES, readPhotos, takePhoto, type Still, type TakenPhoto } from './input-photo';
import type { ModelInput } from './input-photo';
import { modelBehaviour, type ModelBehaviour } from './models';
import { StagedFiles } from './staged-files';
import { transcribe } from './transcription';

export interface ProviderSimulatorOptions {
  /** 0 picks a free port. */
  port?: number;
  host?: string;
  /** A task finishes this long after its submission (a video also not before its clip is encoded). */
  latencyMs: number;
  /** Share of tasks, 0..1, that end `failed` with `internal_error`, for load tests. */
  failureRate?: number;
  /** Known API keys and their concurrency caps; when absent, any key is accepted with `defaultConcurrency`. */
  accounts?: Record<string, number>;
  defaultConcurrency?: number;
  /** How long results and finished tasks are kept, so a long load test does not fill the disk. */
  resultTtlMs?: number;
  /** How long a file uploaded with `POST /v1/files` is kept (an hour unless told). */
  fileTtlMs?: number;
  log?: Logger;
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
  /**
   * Submissions of a client reference that already had a task: answered with that task, as an
   * idempotent provider does; a provider without idempotency would have run (and billed) it twice.
   */
  repeatedSubmissions: number;
  /** Result files served (a caller that copies each result once downloads it once). */
  resultsServed: number;
  /** Task callbacks POSTed, each try counted (a callback answered `5xx` is tried again). */
  callbackCalls: number;
  /** Tasks shown by `GET /v1/tasks/{id}`: the caller's polls. */
  polls: number;
  /** Files uploaded with `POST /v1/files`. */
  filesStaged: number;
  /** Task inputs read from the provider's own file store instead of downloaded. */
  stagedInputsRead: number;
  /** Results the models rendered: a light model's halfway through the task's latency, or before the answer when there is none. */
  rendered: number;
}

export interface ProviderSimulator {
  url: string;
  stop(): Promise<void>;
  stats(): ProviderSimulatorStats;
}

type TaskOutcome =
  | { status: 'succeeded'; result: { fileName: string; filePath: string; contentType: string } }
  | { status: 'failed'; error: { type: string; message: string } };

interface Task {
  id: string;
  apiKey: string;
  clientReference: string | null;
  slot: Slot;
  /** Where to POST the finished task, as real providers' webhooks do (once, no retry: a lost call is the caller's to cover). */
  callbackUrl: string | null;
  state: { status: 'running' } | TaskOutcome;
}

/** A task request as the simulator reads it. */
interface TaskRequest {
  model: string;
  inputs: ProviderInput[];
  prompt?: string;
  clientReference: string | null;
  callbackUrl?: string;
}

/** The options, checked and with their defaults. */
interface Settings {
  latencyMs: number;
  failureRate: number;
  accounts: Map<string, number> | null;
  defaultConcurrency: number;
  resultTtlMs: number;
  fileTtlMs: number;
  log: Logger | undefined;
}

const MAX_BODY_BYTES = 1024 * 1024;
/** Two minutes of 16 kHz mono 16-bit PCM is 3.84 MB. */
const MAX_AUDIO_BYTES = 8 * 1024 * 1024;
const MAX_PROMPT_LENGTH = 20_000;
const MAX_INPUTS = 16;
const MAX_REFERENCE_LENGTH = 200;
const DEFAULT_CONCURRENCY = 4;
const DEFAULT_RESULT_TTL_MS = 15 * 60_000;
const DEFAULT_FILE_TTL_MS = 60 * 60_000;
/** Before each attempt of a task callback. */
const callbackBackoffMs = [0, 50, 250];
/** Heavy renders (video encodes) run a few at a time, so a load test leaves the machine usable. */
const HEAVY_RENDERS = Math.max(1, Math.floor(os.availableParallelism() / 2));

/** Starts the AI provider simulator: the provider's HTTP API on loopback, with real photo downloads and results. */
export async function startProviderSimulator(options: ProviderSimulatorOptions): Promise<ProviderSimulator> {
  const settings = checkedSettings(options);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'provider-simulator-'));
  const simulator = new Simulator(settings, dir);
  try {
    const url = await simulator.listen(options.port ?? 0, options.host ?? '127.0.0.1');
    settings.log?.info({ url }, 'provider simulator listening');
    return { url, stop: () => simulator.stop(), stats: () => simulator.stats() };
  } catch (error) {
    await simulator.stop();
    throw error;
  }
}

class Simulator {
  private readonly server = http.createServer((req, res) => this.track(this.handle(req, res)));
  private readonly lifetime = new AbortController();
  private readonly slots = new AccountSlots();
  private readonly tasks = new Map<string, Task>();
  /** Tasks by API key and client reference (`referenceKey`). */
  private readonly byReference = new Map<string, Task>();
  /** Finished tasks in completion order, which is also their expiry order. */
  private readonly expiring: { task: Task; expiresAt: number }[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  private readonly heavyRenders = pLimit(HEAVY_RENDERS);
  private readonly sweeper: NodeJS.Timeout;
  private readonly counts = { submitted: 0, completed: 0, rejectedBusy: 0, repeatedSubmissions: 0, resultsServed: 0, callbackCalls: 0, polls: 0, filesStaged: 0, stagedInputsRead: 0, rendered: 0 };
  private readonly files: StagedFiles;
  /** By API key: when each freed slot became free, oldest first, until a submission takes it. */
  private readonly freedAt = new Map<string, number[]>();
  private readonly slotGapsMs: number[] = [];
  private readonly callbackAnswersMs: number[] = [];
  private readonly inputReadsMs: number[] = [];
  private lastCompletedAt: number | null = null;
  private url = '';
  private stopping: Promise<void> | null = null;

  constructor(
    private readonly settings: Settings,
    private readonly dir: string,
  ) {
    this.files = new StagedFiles(path.join(dir, 'files'), settings.fileTtlMs);
    this.sweeper = setInterval(() => this.sweep(), Math.max(10, Math.min(settings.resultTtlMs, settings.fileTtlMs, 60_000))).unref();
  }

  async listen(port: number, host: string): Promise<string> {
    // Its port is SIM_PROVIDER_PORT wherever a process starts it (`from-config.ts`).
    this.url = `http://${host}:${await listen(this.server, port, host, 'SIM_PROVIDER_PORT')}`;
    return this.url;
  }

  stats(): ProviderSimulatorStats {
    return { running: this.slots.running(), ...this.counts, slotGapsMs: [...this.slotGapsMs], callbackAnswersMs: [...this.callbackAnswersMs], inputReadsMs: [...this.inputReadsMs], lastCompletedAt: this.lastCompletedAt };
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.lifetime.abort();
      clearInterval(this.sweeper);
      this.server.closeAllConnections();
      await new Promise<void>((resolve) => this.server.close(() => resolve()));
      // Work still running may start more (a submission schedules its task's completion).
      while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
      await rm(this.dir, { recursive: true, force: true });
    })();
    return this.stopping;
  }

  private track(work: Promise<void>): void {
    this.inFlight.add(work);
    const forget = () => this.inFlight.delete(work);
    work.then(forget, forget);
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    try {
      const { pathname } = new URL(req.url ?? '/', 'http://simulator');
      const taskPath = /^\/v1\/tasks\/([^/]+)$/.exec(pathname);
      const resultPath = /^\/results\/([^/]+)$/.exec(pathname);
      const filePath = /^\/v1\/files\/([^/]+)$/.exec(pathname);
      if (req.method === 'POST' && pathname === '/v1/tasks') await this.submit(req, res);
      else if (req.method === 'POST' && pathname === '/v1/files') await this.stageFile(req, res);
      else if (req.method === 'GET' && filePath) await this.serveFile(res, filePath[1]);
      else if (req.method === 'GET' && pathname === '/v1/tasks') this.findByReference(req, res);
      else if (req.method === 'POST' && pathname === '/v1/transcriptions') await this.transcribe(req, res);
      else if (req.method === 'POST' && pathname === '/v1/audio/transcriptions') await this.transcribeAsOpenAi(req, res);
      else if (req.method === 'GET' && taskPath) this.show(req, res, taskPath[1]);
      else if (req.method === 'GET' && resultPath) await this.serveResult(res, resultPath[1]);
      // The simulator's own counters, for load and fault tests that run it as a process of its own.
      else if (req.method === 'GET' && pathname === '/simulator/stats') sendJson(res, 200, this.stats());
      else sendError(res, 404, 'not_found', 'no such endpoint');
    } catch (error) {
      this.settings.log?.error({ err: error, method: req.method, url: req.url }, 'provider simulator request failed');
      if (!res.headersSent) sendError(res, 500, 'internal_error', 'the simulator failed');
      else res.destroy();
    }
  }

  private async submit(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const apiKey = this.authenticate(req);
    if (apiKey === null) return sendError(res, 401, 'unauthorized', 'unknown API key');
    const request = parseTaskRequest(await readBody(req));
    if (typeof request === 'string') return sendError(res, 400, 'invalid_request', request);
    if (this.answeredAgain(res, apiKey, request.clientReference)) return;
    const behaviour = modelBehaviour(request.model);
    if (!behaviour) return sendError(res, 404, 'no_model', `no model ${request.model}`);
    if (behaviour.kind === 'renders' && behaviour.needsPhoto && request.inputs.length === 0) {
      return sendError(res, 400, 'invalid_request', `model ${request.model} needs a photo`);
    }

    const { latencyMs } = this.settings;
    const slot = this.slots.acquire(apiKey, this.capOf(apiKey), Date.now() + latencyMs);
    if (!slot) {
      this.counts.rejectedBusy += 1;
      res.setHeader('retry-after', String(this.slots.retryAfterS(apiKey, Date.now())));
      return sendError(res, 429, 'rate_limited', 'the account runs its concurrency cap of tasks');
    }
    const freed = this.freedAt.get(apiKey)?.shift();
    if (freed !== undefined) this.slotGapsMs.push(Date.now() - freed);
    const arrivedAt = Date.now();
    let photo: TakenPhoto | null = null;
    try {
      const photos = await readPhotos(request.inputs.map((input) => input.url), this.lifetime.signal, (url) => this.stagedInput(url));
      if (photos.length) photo = await takePhoto(photos[0]);
    } catch (error) {
      const judged = error instanceof BadInputImageError && behaviour.kind === 'renders' && behaviour.judgesPhotos;
      if (!judged) {
        this.slots.release(slot);
        if (error instanceof BadInputImageError) return sendError(res, 400, 'bad_input_image', error.message);
        throw error;
      }
    }
    // The same reference may have been submitted again while these photos downloaded.
    if (this.answeredAgain(res, apiKey, request.clientReference)) return this.slots.release(slot);

    const task: Task = { id: randomUUID(), apiKey, clientReference: request.clientReference, slot, callbackUrl: request.callbackUrl ?? null, state: { status: 'running' } };
    slot.finishAt = Date.now() + latencyMs;
    this.inputReadsMs.push(Date.now() - arrivedAt);
    this.tasks.set(task.id, task);
    if (task.clientReference !== null) this.byReference.set(referenceKey(apiKey, task.clientReference), task);
    this.counts.submitted += 1;
    const input = { photo, prompt: request.prompt ?? '' };
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
    sendJson(res, 202, { id: task.id, status: 'queued' });
  }

  /**
   * `POST /v1/files`: the body is kept as a file tasks can name by the link answered (readable by
   * anyone who has it, as a storage CDN's), until `expires_at`.
   */
  private async stageFile(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (this.authenticate(req) === null) return sendError(res, 401, 'unauthorized', 'unknown API key');
    const body = await readBytes(req, MAX_PHOTO_BYTES);
    if (body === null) return sendError(res, 413, 'too_large', `file above ${MAX_PHOTO_BYTES} bytes`);
    if (body.length === 0) return sendError(res, 400, 'invalid_request', 'the file is empty');
    const file = await this.files.put(body, req.headers['content-type'] ?? 'application/octet-stream');
    this.counts.filesStaged += 1;
    sendJson(res, 201, { id: file.id, url: this.fileUrl(file.id), expires_at: new Date(file.expiresAt).toISOString() });
  }

  private fileUrl(id: string): string {
    return `${this.url}/v1/files/${id}`;
  }

  /** A task input that names a staged file: its bytes from this store; null for any other link. */
  private stagedInput(url: string): Promise<Buffer> | null {
    const prefix = this.fileUrl('');
    if (!url.startsWith(prefix)) return null;
    this.counts.stagedInputsRead += 1;
    return this.files.read(url.slice(prefix.length));
  }

  private async serveFile(res: http.ServerResponse, id: string): Promise<void> {
    const file = this.files.get(id);
    if (!file || !(await sendFile(res, this.files.pathOf(id), file.contentType))) sendError(res, 404, 'not_found', 'no such file');
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
      return { status: 'succeeded', result: { fileName, filePath, contentType: behaviour.contentType } };
    } catch (error) {
      if (!signal.aborted) this.settings.log?.warn({ err: error, taskId: task.id }, 'simulated model failed to render');
      return failed('internal_error', 'the model failed to render');
    }
  }

  private async finish(task: Task, outcome: Promise<TaskOutcome>): Promise<void> {
    const state = await outcome;
    const wait = task.slot.finishAt - Date.now();
    if (wait > 0) await delay(wait, undefined, { signal: this.lifetime.signal }).catch(() => undefined);
    if (this.lifetime.signal.aborted) return;
    task.state = state;
    this.slots.release(task.slot);
    const freed = this.freedAt.get(task.apiKey) ?? [];
    this.freedAt.set(task.apiKey, freed);
    const finishedAt = Date.now();
    freed.push(finishedAt);
    this.lastCompletedAt = finishedAt;
    this.expiring.push({ task, expiresAt: Date.now() + this.settings.resultTtlMs });
    this.counts.completed += 1;
    if (task.callbackUrl && (await this.callBack(task, task.callbackUrl))) this.callbackAnswersMs.push(Date.now() - finishedAt);
  }

  /** POSTs the finished task to its callback URL; a 5xx or a network error is tried again, twice. True when it was answered `2xx`. */
  private async callBack(task: Task, url: string): Promise<boolean> {
    for (const [attempt, backoffMs] of callbackBackoffMs.entries()) {
      if (backoffMs) await delay(backoffMs, undefined, { signal: this.lifetime.signal }).catch(() => undefined);
      if (this.lifetime.signal.aborted) return false;
      this.counts.callbackCalls += 1;
      try {
        const { status } = await exchange(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(this.view(task)),
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

  /** A submission of a reference that already has a task is answered with that task (`200`), once more counted. */
  private answeredAgain(res: http.ServerResponse, apiKey: string, clientReference: string | null): boolean {
    const task = clientReference === null ? undefined : this.byReference.get(referenceKey(apiKey, clientReference));
    if (!task) return false;
    this.counts.repeatedSubmissions += 1;
    sendJson(res, 200, this.view(task));
    return true;
  }

  /** `GET /v1/tasks?client_reference=`: the account's task of that reference, as a list of at most one. */
  private findByReference(req: http.IncomingMessage, res: http.ServerResponse): void {
    const apiKey = this.authenticate(req);
    if (apiKey === null) return sendError(res, 401, 'unauthorized', 'unknown API key');
    const clientReference = new URL(req.url ?? '/', 'http://simulator').searchParams.get('client_reference');
    if (!clientReference) return sendError(res, 400, 'invalid_request', 'client_reference is required');
    const task = this.byReference.get(referenceKey(apiKey, clientReference));
    sendJson(res, 200, { data: task ? [this.view(task)] : [] });
  }

  /** The speech endpoint: a 16-bit PCM WAV in, its transcript out, at once (README, "Voice input"). */
  private async transcribe(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (this.authenticate(req) === null) return sendError(res, 401, 'unauthorized', 'unknown API key');
    const audio = await readBytes(req, MAX_AUDIO_BYTES);
    if (audio === null) return sendError(res, 413, 'too_large', `audio above ${MAX_AUDIO_BYTES} bytes`);
    const language = new URL(req.url ?? '/', 'http://simulator').searchParams.get('language');
    const transcript = transcribe(audio, language);
    if (typeof transcript === 'string') return sendError(res, 400, 'invalid_audio', transcript);
    sendJson(res, 200, transcript);
  }

  /**
   * The same recognition in the shape of OpenAI's `POST /v1/audio/transcriptions` (README, "Voice
   * input"): multipart with the recording in `file`, `model`, optional `language`, `response_format`
   * `json` (the default) answered `{text}`, as a service configured with TRANSCRIPTION_URL speaks it.
   */
  private async transcribeAsOpenAi(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (this.authenticate(req) === null) return sendError(res, 401, 'invalid_request_error', 'Incorrect API key provided');
    const body = await readBytes(req, MAX_AUDIO_BYTES + MAX_BODY_BYTES);
    if (body === null) return sendError(res, 413, 'invalid_request_error', `audio above ${MAX_AUDIO_BYTES} bytes`);
    let form: FormData;
    try {
      form = await new Request('http://simulator/', { method: 'POST', headers: { 'content-type': req.headers['content-type'] ?? '' }, body }).formData();
    } catch {
      return sendError(res, 400, 'invalid_request_error', 'the body must be multipart/form-data');
    }
    const file = form.get('file');
    const model = form.get('model');
    const language = form.get('language');
    const format = form.get('response_format') ?? 'json';
    if (!(file instanceof Blob)) return sendError(res, 400, 'invalid_request_error', 'file is required');
    if (typeof model !== 'string' || model === '') return sendError(res, 400, 'invalid_request_error', 'model is required');
    if (format !== 'json') return sendError(res, 400, 'invalid_request_error', 'the simulator answers response_format json only');
    const transcript = transcribe(Buffer.from(await file.arrayBuffer()), typeof language === 'string' ? language : null);
    if (typeof transcript === 'string') return sendError(res, 400, 'invalid_request_error', transcript);
    sendJson(res, 200, { text: transcript.text });
  }

  private show(req: http.IncomingMessage, res: http.ServerResponse, taskId: string): void {
    const apiKey = this.authenticate(req);
    if (apiKey === null) return sendError(res, 401, 'unauthorized', 'unknown API key');
    const task = this.tasks.get(taskId);
    if (!task || task.apiKey !== apiKey) return sendError(res, 404, 'not_found', 'no such task');
    this.counts.polls += 1;
    sendJson(res, 200, this.view(task));
  }

  /** A task as `GET /v1/tasks/{id}` and the callback show it. */
  private view(task: Task): object {
    const { state } = task;
    return {
      id: task.id,
      client_reference: task.clientReference,
      status: state.status,
      result: state.status === 'succeeded' ? { url: `${this.url}/results/${state.result.fileName}`, content_type: state.result.contentType } : null,
      error: state.status === 'failed' ? state.error : null,
    };
  }

  private async serveResult(res: http.ServerResponse, fileName: string): Promise<void> {
    const state = this.tasks.get(fileName.split('.')[0])?.state;
    if (state?.status !== 'succeeded' || state.result.fileName !== fileName) return sendError(res, 404, 'not_found', 'no such result');
    if (!(await sendFile(res, state.result.filePath, state.result.contentType))) return sendError(res, 404, 'not_found', 'no such result');
    this.counts.resultsServed += 1;
  }

  private sweep(): void {
    const now = Date.now();
    this.files.sweep(now, (error) => this.settings.log?.warn({ err: error }, 'could not delete a staged file'));
    for (const { task } of takeExpired(this.expiring, now)) {
      this.tasks.delete(task.id);
      if (task.clientReference !== null) this.byReference.delete(referenceKey(task.apiKey, task.clientReference));
      if (task.state.status === 'succeeded') {
        rm(task.state.result.filePath, { force: true }).catch((error: unknown) => this.settings.log?.warn({ err: error }, 'could not delete a result'));
      }
    }
  }

  /** The request's API key when the simulator knows it, else null. */
  private authenticate(req: http.IncomingMessage): string | null {
    const apiKey = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
    if (apiKey === undefined) return null;
    const { accounts } = this.settings;
    return accounts === null || accounts.has(apiKey) ? apiKey : null;
  }

  private capOf(apiKey: string): number {
    return this.settings.accounts?.get(apiKey) ?? this.settings.defaultConcurrency;
  }
}

function checkedSettings(options: ProviderSimulatorOptions): Settings {
  const failureRate = nonNegative('failureRate', options.failureRate ?? 0);
  if (failureRate > 1) throw new RangeError('failureRate must be between 0 and 1');
  return {
    latencyMs: nonNegative('latencyMs', options.latencyMs),
    failureRate,
    accounts: options.accounts
      ? new Map(Object.entries(options.accounts).map(([apiKey, cap]) => [apiKey, concurrencyCap(`accounts[${apiKey}]`, cap)]))
      : null,
    defaultConcurrency: concurrencyCap('defaultConcurrency', options.defaultConcurrency ?? DEFAULT_CONCURRENCY),
    resultTtlMs: nonNegative('resultTtlMs', options.resultTtlMs ?? DEFAULT_RESULT_TTL_MS),
    fileTtlMs: nonNegative('fileTtlMs', options.fileTtlMs ?? DEFAULT_FILE_TTL_MS),
    log: options.log?.child({ component: 'provider-simulator' }),
  };
}

function nonNegative(name: string, value: number): number {
  if (!Number.isFinite(value) || value < 0) throw new RangeError(`${name} must be a non-negative number`);
  return value;
}

function concurrencyCap(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer`);
  return value;
}

function failed(type: string, message: string): TaskOutcome {
  return { status: 'failed', error: { type, message } };
}

/** The body's bytes, or null when it is larger than `maxBytes`. */
async function readBytes(req: http.IncomingMessage, maxBytes: number): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** The body as JSON, or undefined when it is too large or not JSON (answered as an invalid request). */
async function readBody(req: http.IncomingMessage): Promise<unknown> {
  const body = await readBytes(req, MAX_BODY_BYTES);
  if (body === null) return undefined;
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

function referenceKey(apiKey: string, clientReference: string): string {
  return `${apiKey}\n${clientReference}`;
}

/** The task request, or what is wrong with it. */
function parseTaskRequest(body: unknown): TaskRequest | string {
  if (typeof body !== 'object' || body === null) return 'the body must be a JSON object';
  const { model, inputs, prompt, client_reference: clientReference, callback_url: callbackUrl } = body as { model?: unknown; inputs?: unknown; prompt?: unknown; client_reference?: unknown; callback_url?: unknown };
  if (clientReference !== undefined && clientReference !== null && (typeof clientReference !== 'string' || clientReference === '' || clientReference.length > MAX_REFERENCE_LENGTH)) {
    return `client_reference must be a string of 1 to ${MAX_REFERENCE_LENGTH} characters`;
  }
  if (typeof model !== 'string' || model === '') return 'model must be a non-empty string';
  if (!Array.isArray(inputs) || inputs.length > MAX_INPUTS) return `inputs must hold at most ${MAX_INPUTS} photos`;
  if (prompt !== undefined && (typeof prompt !== 'string' || prompt.length > MAX_PROMPT_LENGTH)) return `prompt must be a string of at most ${MAX_PROMPT_LENGTH} characters`;
  for (const input of inputs as { url?: unknown; person?: unknown }[]) {
    if (typeof input?.url !== 'string' || !/^https?:\/\//.test(input.url)) return 'every input needs an http(s) url';
    if (!Number.isInteger(input.person) || (input.person as number) < 0) return 'every input needs a person index >= 0';
  }
  if (callbackUrl !== undefined && (typeof callbackUrl !== 'string' || !/^https?:\/\//.test(callbackUrl))) return 'callback_url must be an http(s) url';
  return {
    model,
    inputs: inputs as ProviderInput[],
    ...(prompt === undefined ? {} : { prompt: prompt as string }),
    clientReference: (clientReference as string | null | undefined) ?? null,
    ...(callbackUrl === undefined ? {} : { callbackUrl: callbackUrl as string }),
  };
}

/** Streams a file of the simulator's disk; false when it is gone. */
async function sendFile(res: http.ServerResponse, filePath: string, contentType: string): Promise<boolean> {
  const size = await stat(filePath).then((stats) => stats.size, () => null);
  if (size === null) return false;
  res.writeHead(200, { 'content-type': contentType, 'content-length': size });
  createReadStream(filePath).on('error', () => res.destroy()).pipe(res);
  return true;
}

function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

function sendError(res: http.ServerResponse, status: number, type: string, message: string): void {
  sendJson(res, status, { error: { type, message } });
}
