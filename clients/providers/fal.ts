import { buildInput, taskResultOf, type ModelRoute } from '../../common/model-route';
import type { FileToStage, PollOutcome, ProviderAccount, ProviderAdapter, ProviderRequest, ProviderResult, StageOutcome, SubmitOutcome, TaskLookup } from './adapter';
import { errorCodeForRefusedPoll, errorCodeForRefusedSubmission } from './error-codes';
import { callProvider, DEFAULT_RESULT_MAX_BYTES, downloadResult, field, isNoAnswer, isRefusal, retryAfterSeconds, text, type Answer, type NoAnswer } from './provider-call';
import { isSuccess } from '../outbound-http';

/**
 * fal's queue API as its official client builds it (`@fal-ai/client`, libs/client/src/queue.ts):
 * submit `POST {queue}/{app id}?fal_webhook={our callback URL}` with the input as the body, status
 * `GET {queue}/{owner}/{alias}/requests/{id}/status`, result `GET .../requests/{id}`, cancel
 * `PUT .../requests/{id}/cancel`, all with `Authorization: Key <key>`. An app id may hold a path
 * (`fal-ai/flux/dev`): the request's URLs name only its owner and alias (`fal-ai/flux`), after a
 * `workflows`/`comfy` namespace when there is one (`parseEndpointId` of utils.ts). Files go to
 * fal's storage: `POST {rest}/storage/upload/initiate` names an upload URL and the file's URL, then
 * the bytes are `PUT` there (storage.ts).
 *
 * Not the SDK: it calls `fetch` and retries on its own (a submit's 429/502/503/504 three times, a
 * status's five times with 500 too, `QUEUE_RETRY_CONFIG` of queue.ts), which would hold slots the
 * pool counts as free and could submit twice after an answer it did not see.
 *
 * A lost answer to a submission cannot be looked up: fal keeps no idempotency key or reference of
 * ours, and its list of an endpoint's requests shows neither our generation nor the webhook. So
 * `findTask` answers `unknowable`: the sweeps never submit such a generation again and count nothing
 * against the account. Its webhook is recorded as an early callback and the sweeps adopt the task it
 * names (`workers/generations/sweeps.ts`); without one, its pending expiry refunds it.
 */
export interface FalOptions {
  /** `https://queue.fal.run` unless told (the simulator's `/fal/queue`). */
  queueUrl?: string;
  /** `https://rest.fal.ai` unless told: its storage uploads. */
  restUrl?: string;
  callTimeoutMs?: number;
  resultTimeoutMs?: number;
  resultMaxBytes?: number;
  /** How long fal keeps a staged file (`X-Fal-Object-Lifecycle`). */
  fileTtlS?: number;
}

type Unavailable = { kind: 'unavailable'; reason: string };

/** fal's error `type`s (a 422's `detail` list) that have a name of their own in our error codes. */
const errorCodeByFalType = new Map<string, string>([
  ['content_policy_violation', 'safety'],
  ['image_load_error', 'bad_input_image'],
  ['file_download_error', 'bad_input_image'],
  ['image_too_large', 'bad_input_image'],
  ['image_too_small', 'bad_input_image'],
  ['unsupported_image_format', 'bad_input_image'],
]);

export class FalAdapter implements ProviderAdapter {
  private readonly queueUrl: string;
  private readonly restUrl: string;
  private readonly callTimeoutMs: number;
  private readonly resultTimeoutMs: number;
  private readonly resultMaxBytes: number;
  private readonly fileTtlS: number;

  constructor(options: FalOptions = {}) {
    this.queueUrl = (options.queueUrl ?? 'https://queue.fal.run').replace(/\/+$/, '');
    this.restUrl = (options.restUrl ?? 'https://rest.fal.ai').replace(/\/+$/, '');
    this.callTimeoutMs = options.callTimeoutMs ?? 15_000;
    this.resultTimeoutMs = options.resultTimeoutMs ?? 60_000;
    this.resultMaxBytes = options.resultMaxBytes ?? DEFAULT_RESULT_MAX_BYTES;
    this.fileTtlS = options.fileTtlS ?? 3600;
  }

  async submit(account: ProviderAccount, request: ProviderRequest): Promise<SubmitOutcome> {
    const { route, inputs, prompt, callbackUrl } = request;
    if (falApp(route.model) === null) return { kind: 'rejected', errorCode: 'no_model', message: `${route.model} is no fal app id` };
    const query = callbackUrl === undefined ? '' : `?fal_webhook=${encodeURIComponent(callbackUrl)}`;
    const input = buildInput(route.input ?? {}, inputs, prompt ?? '');
    const answer = await this.call(account, 'POST', `${this.queueUrl}/${route.model}${query}`, { contentType: 'application/json', data: JSON.stringify(input) });
    if (isNoAnswer(answer)) return { kind: 'unavailable', reason: answer.reason, maybeAccepted: answer.sent };
    const { status, headers, body } = answer;
    if (isSuccess(status)) {
      const id = text(field(body, 'request_id'));
      return id ? { kind: 'accepted', taskId: id } : { kind: 'unavailable', reason: 'queued without a request id', maybeAccepted: true };
    }
    if (status === 429) return { kind: 'busy', retryAfterS: retryAfterSeconds(headers['retry-after']) };
    if (!isRefusal(status)) return { kind: 'unavailable', reason: `HTTP ${status}`, maybeAccepted: true };
    const error = falError(body);
    const errorCode = error.type !== null && errorCodeByFalType.has(error.type) ? errorCodeByFalType.get(error.type)! : errorCodeForRefusedSubmission(status, null);
    return { kind: 'rejected', errorCode, message: error.message };
  }

  findTask(): Promise<TaskLookup> {
    return Promise.resolve({ kind: 'unknowable', reason: 'fal keeps no reference of ours to find a request by' });
  }

  async poll(account: ProviderAccount, taskId: string, route?: ModelRoute): Promise<PollOutcome> {
    const app = route === undefined ? null : falApp(route.model);
    if (app === null) return unavailable('a fal request is polled with the route it was submitted with');
    const requestUrl = `${this.queueUrl}/${app}/requests/${encodeURIComponent(taskId)}`;
    const answer = await this.call(account, 'GET', `${requestUrl}/status?logs=0`);
    if (isNoAnswer(answer)) return unavailable(answer.reason);
    if (isRefusal(answer.status)) return { kind: 'failed', errorCode: errorCodeForRefusedPoll(answer.status), message: falError(answer.body).message };
    if (!isSuccess(answer.status)) return unavailable(`HTTP ${answer.status}`);
    const status = field(answer.body, 'status');
    if (status === 'IN_QUEUE' || status === 'IN_PROGRESS') return { kind: 'running' };
    if (status !== 'COMPLETED') return unavailable(`unknown request status ${JSON.stringify(status)}`);
    const statusError = text(field(answer.body, 'error'));
    if (statusError !== null) return failedWith(text(field(answer.body, 'error_type')), statusError);
    const result = await this.call(account, 'GET', requestUrl);
    if (isNoAnswer(result)) return unavailable(result.reason);
    if (isSuccess(result.status)) return falOutputOutcome(result.body, route!.output);
    // The app's own error is the result (a 4xx, or a 5xx with its `detail`); a 5xx without one may be fal's gateway.
    const error = falError(result.body);
    if (result.status >= 500 && field(result.body, 'detail') === undefined) return unavailable(`result HTTP ${result.status}`);
    return failedWith(error.type, error.message);
  }

  outcomeOfCallback(answer: unknown, route?: ModelRoute): PollOutcome {
    return falWebhookOutcome(answer, route?.output);
  }

  fetchResult(url: string): Promise<ProviderResult> {
    return downloadResult(url, { timeoutMs: this.resultTimeoutMs, maxBytes: this.resultMaxBytes });
  }

  /** fal's storage: the upload initiated (`{upload_url, file_url}`), then the bytes PUT to `upload_url`. */
  async stageFile(account: ProviderAccount, file: FileToStage): Promise<StageOutcome> {
    const extension = file.contentType.split('/')[1]?.replace(/\W.*$/, '') || 'bin';
    const initiated = await callProvider(`${this.restUrl}/storage/upload/initiate?storage_type=fal-cdn-v3`, {
      method: 'POST',
      headers: {
        authorization: `Key ${account.apiKey}`,
        'x-fal-object-lifecycle': JSON.stringify({ expiration_duration_seconds: this.fileTtlS }),
      },
      body: { contentType: 'application/json', data: JSON.stringify({ content_type: file.contentType, file_name: `photo.${extension}` }) },
      timeoutMs: this.callTimeoutMs,
    });
    const expiresAt = new Date(Date.now() + this.fileTtlS * 1000);
    if (isNoAnswer(initiated)) return unavailable(initiated.reason);
    if (!isSuccess(initiated.status)) return unavailable(`HTTP ${initiated.status}`);
    const uploadUrl = text(field(initiated.body, 'upload_url'));
    const fileUrl = text(field(initiated.body, 'file_url'));
    if (uploadUrl === null || fileUrl === null || !/^https?:\/\//.test(fileUrl)) return unavailable('initiated without upload and file links');
    const uploaded = await callProvider(uploadUrl, { method: 'PUT', headers: {}, body: { contentType: file.contentType, data: file.body }, timeoutMs: this.callTimeoutMs });
    if (isNoAnswer(uploaded)) return unavailable(uploaded.reason);
    if (!isSuccess(uploaded.status)) return unavailable(`upload HTTP ${uploaded.status}`);
    return { kind: 'staged', url: fileUrl, expiresAt };
  }

  /** `PUT .../requests/{id}/cancel`: 202 while it can still be stopped, 400 `ALREADY_COMPLETED` after. */
  async cancel(account: ProviderAccount, taskId: string, route?: ModelRoute): Promise<void> {
    const app = route === undefined ? null : falApp(route.model);
    if (app === null) throw new Error(`cancel of ${taskId}: no fal route`);
    const answer = await this.call(account, 'PUT', `${this.queueUrl}/${app}/requests/${encodeURIComponent(taskId)}/cancel`);
    if (isNoAnswer(answer)) throw new Error(`cancel of ${taskId}: ${answer.reason}`);
    if (!isSuccess(answer.status) && field(answer.body, 'status') !== 'ALREADY_COMPLETED') throw new Error(`cancel of ${taskId}: HTTP ${answer.status}`);
  }

  private call(account: ProviderAccount, method: 'GET' | 'POST' | 'PUT', url: string, body?: { contentType: string; data: string }): Promise<Answer | NoAnswer> {
    return callProvider(url, { method, headers: { authorization: `Key ${account.apiKey}` }, body, timeoutMs: this.callTimeoutMs });
  }
}

const namespaces = new Set(['workflows', 'comfy']);

/** The `owner/alias` (after its namespace) of an app id that may hold a path; null when it is no app id. */
export function falApp(model: string): string | null {
  const parts = model.split('/');
  const app = namespaces.has(parts[0]) ? parts.slice(0, 3) : parts.slice(0, 2);
  const least = namespaces.has(parts[0]) ? 3 : 2;
  return parts.length >= least && parts.every((part) => /^(?!\.+$)[\w.-]+$/.test(part)) ? app.join('/') : null;
}

/**
 * A finished request's output: its result link (or a text model's inline answer) by the route's path. A model whose safety checker
 * blacked out every image says so in `has_nsfw_concepts` (fal's image models): that is `safety`,
 * not a result.
 */
export function falOutputOutcome(output: unknown, outputPath: string | undefined): PollOutcome {
  const nsfw = field(output, 'has_nsfw_concepts');
  if (Array.isArray(nsfw) && nsfw.length > 0 && nsfw.every((flag) => flag === true)) {
    return { kind: 'failed', errorCode: 'safety', message: 'the safety checker flagged every output' };
  }
  return { kind: 'succeeded', ...taskResultOf(output, outputPath) };
}

/**
 * A fal webhook's body (`{request_id, status: OK | ERROR, payload, error}`) as the pool reads it:
 * only `OK` and `ERROR` exist, both final. The payload is the result a poll reads, found by the
 * route's output path as there.
 */
export function falWebhookOutcome(body: unknown, outputPath: string | undefined): PollOutcome {
  const status = field(body, 'status');
  if (status === 'OK') return falOutputOutcome(field(body, 'payload'), outputPath);
  if (status === 'ERROR') {
    const error = falError(field(body, 'payload'));
    return failedWith(error.type, text(field(body, 'error')) ?? error.message);
  }
  return unavailable(`unknown webhook status ${JSON.stringify(status)}`);
}

function failedWith(type: string | null, message: string | null): PollOutcome {
  return { kind: 'failed', errorCode: (type !== null && errorCodeByFalType.get(type)) || 'provider_error', message };
}

/** fal's errors: `{detail: [{loc, msg, type}]}` (validation and content checks) or `{detail: "..."}`. */
function falError(body: unknown): { type: string | null; message: string | null } {
  const detail = field(body, 'detail');
  if (Array.isArray(detail)) return { type: text(field(detail[0], 'type')), message: text(field(detail[0], 'msg')) };
  return { type: null, message: text(detail) ?? text(field(body, 'message')) };
}

function unavailable(reason: string): Unavailable {
  return { kind: 'unavailable', reason };
}
