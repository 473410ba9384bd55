import { randomBytes } from 'node:crypto';
import { buildInput, taskResultOf, type ModelRoute } from '../../common/model-route';
import type { FileToStage, PollOutcome, ProviderAccount, ProviderAdapter, ProviderRequest, ProviderResult, StageOutcome, SubmitOutcome, TaskLookup } from './adapter';
import { errorCodeForRefusedPoll, errorCodeForRefusedSubmission } from './error-codes';
import { callProvider, DEFAULT_RESULT_MAX_BYTES, downloadResult, field, isNoAnswer, isRefusal, retryAfterSeconds, text, type Answer, type NoAnswer } from './provider-call';
import { generationOfCallbackUrl } from './task-callback';
import { isSuccess } from '../outbound-http';

/**
 * Replicate's HTTP API (its published OpenAPI document; base `https://api.replicate.com/v1`,
 * `Authorization: Bearer <token>`): a prediction is created on an official model
 * (`POST /models/{owner}/{name}/predictions`) or a version (`POST /predictions` with `version`), with
 * our signed callback URL as its `webhook` (`completed` events only); `GET /predictions/{id}` is the
 * poll, `POST /predictions/{id}/cancel` the cancel, `POST /files` the file store.
 *
 * Not the `replicate` SDK: it calls `fetch` (none of the pool's keep-alive agents or per-call
 * timeouts), and its `request` retries a 429 (and a GET's 5xx) up to five times with its own backoff
 * (`withAutomaticRetries`, lib/util.js): a hidden retry holds a slot the pool counts as free, and it
 * turns "busy" into a wait the pool cannot see. Each call here is one `exchange` of outbound-http.ts.
 *
 * A lost answer to a submission: Replicate keeps no idempotency key and no reference of ours, but it
 * lists an account's predictions newest first (`GET /predictions?created_after=`), each with the
 * webhook it was created with; our webhook URL names the generation (`task-callback.ts`). `findTask`
 * reads the predictions of the lookup window and answers the first one created for the reference;
 * `absent` only when every prediction created through the API in that window shows its webhook,
 * `unavailable` otherwise (the sweeps then never submit again blind).
 */
export interface ReplicateOptions {
  /** `https://api.replicate.com/v1` unless told (the simulator's `/replicate/v1`). */
  baseUrl?: string;
  /** One API call: submit, poll, a page of the lookup, cancel, a file upload. */
  callTimeoutMs?: number;
  resultTimeoutMs?: number;
  resultMaxBytes?: number;
  /** How far back `findTask` looks: longer than a submission can stay unresolved (PENDING_TIMEOUT_S). */
  lookupWindowS?: number;
  /** Pages of 100 predictions `findTask` reads at most before it answers `unavailable`. */
  lookupMaxPages?: number;
}

/** A version id: 64 hex digits, alone or after `owner/name:`. */
const versionPattern = /^(?:[\w.-]+\/[\w.-]+:)?([0-9a-f]{64})$/;
const officialModelPattern = /^((?!\.+\/)[\w.-]+)\/((?!\.+$)[\w.-]+)$/;

type Unavailable = { kind: 'unavailable'; reason: string };

export class ReplicateAdapter implements ProviderAdapter {
  private readonly baseUrl: string;
  private readonly callTimeoutMs: number;
  private readonly resultTimeoutMs: number;
  private readonly resultMaxBytes: number;
  private readonly lookupWindowS: number;
  private readonly lookupMaxPages: number;

  constructor(options: ReplicateOptions = {}) {
    this.baseUrl = (options.baseUrl ?? 'https://api.replicate.com/v1').replace(/\/+$/, '');
    this.callTimeoutMs = options.callTimeoutMs ?? 15_000;
    this.resultTimeoutMs = options.resultTimeoutMs ?? 60_000;
    this.resultMaxBytes = options.resultMaxBytes ?? DEFAULT_RESULT_MAX_BYTES;
    this.lookupWindowS = options.lookupWindowS ?? 3600;
    this.lookupMaxPages = options.lookupMaxPages ?? 10;
  }

  async submit(account: ProviderAccount, request: ProviderRequest): Promise<SubmitOutcome> {
    const { route, inputs, prompt, callbackUrl } = request;
    const version = versionPattern.exec(route.model)?.[1];
    const official = officialModelPattern.exec(route.model);
    if (!version && !official) return { kind: 'rejected', errorCode: 'no_model', message: `${route.model} is neither owner/name nor a version id` };
    const path = version ? '/predictions' : `/models/${official![1]}/${official![2]}/predictions`;
    const payload = {
      ...(version ? { version } : {}),
      input: buildInput(route.input ?? {}, inputs, prompt ?? ''),
      ...(callbackUrl === undefined ? {} : { webhook: callbackUrl, webhook_events_filter: ['completed'] }),
    };
    const answer = await this.call(account, 'POST', path, { contentType: 'application/json', data: JSON.stringify(payload) });
    if (isNoAnswer(answer)) return { kind: 'unavailable', reason: answer.reason, maybeAccepted: answer.sent };
    const { status, body } = answer;
    if (isSuccess(status)) {
      const id = text(field(body, 'id'));
      return id ? { kind: 'accepted', taskId: id } : { kind: 'unavailable', reason: 'created without a prediction id', maybeAccepted: true };
    }
    if (status === 429) return { kind: 'busy', retryAfterS: throttledFor(answer) };
    if (!isRefusal(status)) return { kind: 'unavailable', reason: `HTTP ${status}`, maybeAccepted: true };
    // Replicate names no cause: its 422 for a photo link it cannot read is the one for any input its model refuses.
    return { kind: 'rejected', errorCode: errorCodeForRefusedSubmission(status, null), message: problemDetail(body), ...(status === 422 ? { mayBePhotos: true } : {}) };
  }

  async findTask(account: ProviderAccount, clientReference: string): Promise<TaskLookup> {
    const since = new Date(Date.now() - this.lookupWindowS * 1000).toISOString();
    let link = `${this.baseUrl}/predictions?created_after=${encodeURIComponent(since)}`;
    let found: string | null = null;
    let unjudged = 0;
    for (let page = 0; page < this.lookupMaxPages; page += 1) {
      const answer = await this.call(account, 'GET', link);
      if (isNoAnswer(answer)) return unavailable(answer.reason);
      if (!isSuccess(answer.status)) return unavailable(`HTTP ${answer.status}`);
      const predictions = field(answer.body, 'results');
      if (!Array.isArray(predictions)) return unavailable('listed without results');
      for (const prediction of predictions) {
        const webhook = text(field(prediction, 'webhook'));
        // Newest first: the last match is the first prediction made for the reference.
        if (webhook !== null && generationOfCallbackUrl(webhook) === clientReference) found = text(field(prediction, 'id')) ?? found;
        else if (webhook === null && field(prediction, 'source') !== 'web') unjudged += 1;
      }
      const next = text(field(answer.body, 'next'));
      if (next === null) {
        if (found !== null) return { kind: 'found', taskId: found };
        return unjudged === 0 ? { kind: 'absent' } : unavailable(`${unjudged} recent predictions do not show their webhook`);
      }
      // The next page is read at our own base with its query: the token goes nowhere else, and a
      // proxy in front (REPLICATE_API_URL) is not bypassed by a link naming Replicate's own host.
      const query = URL.parse(next)?.search;
      if (query === undefined) return unavailable('the next page is no link');
      link = `${this.baseUrl}/predictions${query}`;
    }
    return found !== null ? { kind: 'found', taskId: found } : unavailable(`more than ${this.lookupMaxPages} pages of recent predictions`);
  }

  async poll(account: ProviderAccount, taskId: string, route?: ModelRoute): Promise<PollOutcome> {
    const answer = await this.call(account, 'GET', `${this.baseUrl}/predictions/${encodeURIComponent(taskId)}`);
    if (isNoAnswer(answer)) return unavailable(answer.reason);
    if (isRefusal(answer.status)) return { kind: 'failed', errorCode: errorCodeForRefusedPoll(answer.status), message: problemDetail(answer.body) };
    if (!isSuccess(answer.status)) return unavailable(`HTTP ${answer.status}`);
    return predictionOutcome(answer.body, route?.output);
  }

  outcomeOfCallback(answer: unknown, route?: ModelRoute): PollOutcome {
    return predictionOutcome(answer, route?.output);
  }

  fetchResult(url: string): Promise<ProviderResult> {
    return downloadResult(url, { timeoutMs: this.resultTimeoutMs, maxBytes: this.resultMaxBytes });
  }

  /** `POST /files` (multipart: `content`, `type`, `filename`); its `urls.get` is the link a prediction's input names (as the JS client's file inputs do). */
  async stageFile(account: ProviderAccount, file: FileToStage): Promise<StageOutcome> {
    const filename = `photo.${file.contentType.split('/')[1]?.replace(/\W.*$/, '') || 'bin'}`;
    const form = multipart(filename, { content: file, type: file.contentType, filename });
    const answer = await this.call(account, 'POST', `${this.baseUrl}/files`, form);
    if (isNoAnswer(answer)) return unavailable(answer.reason);
    if (!isSuccess(answer.status)) return unavailable(`HTTP ${answer.status}`);
    const url = text(field(field(answer.body, 'urls'), 'get'));
    const expiresAt = new Date(String(field(answer.body, 'expires_at')));
    if (url === null || !/^https?:\/\//.test(url)) return unavailable('stored without a file link');
    if (Number.isNaN(expiresAt.getTime())) return unavailable('stored without an expiry');
    return { kind: 'staged', url, expiresAt };
  }

  /** `POST /predictions/{id}/cancel`; a prediction already finished answers as it is, which is fine. */
  async cancel(account: ProviderAccount, taskId: string): Promise<void> {
    const answer = await this.call(account, 'POST', `${this.baseUrl}/predictions/${encodeURIComponent(taskId)}/cancel`);
    if (isNoAnswer(answer)) throw new Error(`cancel of ${taskId}: ${answer.reason}`);
    if (!isSuccess(answer.status)) throw new Error(`cancel of ${taskId}: HTTP ${answer.status}`);
  }

  /** `path`: under the base URL, or a whole link of it (a page's `next`). */
  private call(account: ProviderAccount, method: 'GET' | 'POST', path: string, body?: { contentType: string; data: string | Buffer }): Promise<Answer | NoAnswer> {
    const url = path.startsWith('/') ? `${this.baseUrl}${path}` : path;
    return callProvider(url, { method, headers: { authorization: `Bearer ${account.apiKey}` }, body, timeoutMs: this.callTimeoutMs });
  }
}

/**
 * A prediction (a poll's answer or a webhook's body) as the pool reads it. `failed` with a content
 * filter's message is `safety`: Replicate reports it in the `error` string only ("NSFW content
 * detected", "flagged as sensitive (E005)").
 */
export function predictionOutcome(prediction: unknown, outputPath: string | undefined): PollOutcome {
  const status = field(prediction, 'status');
  switch (status) {
    case 'starting':
    case 'processing':
      return { kind: 'running' };
    case 'succeeded':
      return { kind: 'succeeded', ...taskResultOf(field(prediction, 'output'), outputPath) };
    case 'failed': {
      const message = errorText(field(prediction, 'error'));
      return { kind: 'failed', errorCode: message !== null && safetyMessage.test(message) ? 'safety' : 'provider_error', message };
    }
    case 'canceled':
      return { kind: 'failed', errorCode: 'canceled', message: 'the prediction was canceled' };
    case 'aborted':
      // Ended before it started: a deadline passed while it waited for a machine.
      return { kind: 'failed', errorCode: 'provider_timeout', message: 'the prediction was aborted before it started' };
    default:
      return unavailable(`unknown prediction status ${JSON.stringify(status)}`);
  }
}

const safetyMessage = /nsfw|flagged as sensitive|\bE005\b|safety (?:checker|filter)/i;

function errorText(error: unknown): string | null {
  if (typeof error === 'string') return error;
  return error === null || error === undefined ? null : JSON.stringify(error);
}

/** Replicate's errors are problem documents: `{ title, detail, status }`. */
function problemDetail(body: unknown): string | null {
  return text(field(body, 'detail')) ?? text(field(body, 'title'));
}

/** A 429's wait: its Retry-After, else the "Expected available in N seconds" of its detail. */
function throttledFor(answer: Answer): number {
  const header = answer.headers['retry-after'];
  if (header !== undefined) return retryAfterSeconds(header);
  const seconds = /available in (\d+(?:\.\d+)?) second/i.exec(problemDetail(answer.body) ?? '')?.[1];
  return retryAfterSeconds(seconds);
}

function unavailable(reason: string): Unavailable {
  return { kind: 'unavailable', reason };
}

/** A multipart/form-data body of text fields and one file field. */
function multipart(filename: string, fields: Record<string, string | FileToStage>): { contentType: string; data: Buffer } {
  const boundary = `----replicate-${randomBytes(12).toString('hex')}`;
  const parts = Object.entries(fields).flatMap(([name, value]) => typeof value === 'string'
    ? [Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`)]
    : [Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"; filename="${filename}"\r\nContent-Type: ${value.contentType}\r\n\r\n`), value.body, Buffer.from('\r\n')]);
  return { contentType: `multipart/form-data; boundary=${boundary}`, data: Buffer.concat([...parts, Buffer.from(`--${boundary}--\r\n`)]) };
}
