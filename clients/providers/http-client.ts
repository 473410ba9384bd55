import type { PollOutcome, ProviderAccount, ProviderAdapter, ProviderRequest, ProviderResult, FileToStage, StageOutcome, SubmitOutcome, TaskLookup } from './adapter';
import { errorCodeForFailedTask, errorCodeForRefusedPoll, errorCodeForRefusedSubmission } from './error-codes';
import { callProvider, DEFAULT_RESULT_MAX_BYTES, downloadResult, field, isNoAnswer, isRefusal, retryAfterSeconds, type Answer, type NoAnswer } from './provider-call';
import { isSuccess } from '../outbound-http';

export interface HttpProviderOptions {
  baseUrl: string;
  submitTimeoutMs?: number;
  pollTimeoutMs?: number;
  lookupTimeoutMs?: number;
  resultTimeoutMs?: number;
  stageTimeoutMs?: number;
  /** The largest result file taken (a provider's video is tens of MB; a runaway answer must not fill the worker's memory). */
  resultMaxBytes?: number;
}

type Unavailable = { kind: 'unavailable'; reason: string };
/**
 * The provider's HTTP API (`POST /v1/tasks` with a `client_reference` and an optional `callback_url`
 * the provider POSTs the finished task to, `GET /v1/tasks/{id}`, `GET /v1/tasks?client_reference=`,
 * `POST /v1/files`, result links), each call one `exchange`.
 */
export class HttpProviderAdapter implements ProviderAdapter {
  private readonly baseUrl: string;
  private readonly submitTimeoutMs: number;
  private readonly pollTimeoutMs: number;
  private readonly lookupTimeoutMs: number;
  private readonly resultTimeoutMs: number;
  private readonly stageTimeoutMs: number;
  private readonly resultMaxBytes: number;

  constructor(options: HttpProviderOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.submitTimeoutMs = options.submitTimeoutMs ?? 15_000;
    this.pollTimeoutMs = options.pollTimeoutMs ?? 15_000;
    this.lookupTimeoutMs = options.lookupTimeoutMs ?? 5000;
    this.resultTimeoutMs = options.resultTimeoutMs ?? 60_000;
    this.stageTimeoutMs = options.stageTimeoutMs ?? 30_000;
    this.resultMaxBytes = options.resultMaxBytes ?? DEFAULT_RESULT_MAX_BYTES;
  }

  async submit(account: ProviderAccount, request: ProviderRequest): Promise<SubmitOutcome> {
    const { route, inputs, prompt, clientReference, callbackUrl } = request;
    const payload = {
      model: route.model,
      inputs,
      ...(prompt === undefined ? {} : { prompt }),
      client_reference: clientReference,
      ...(callbackUrl === undefined ? {} : { callback_url: callbackUrl }),
    };
    const answer = await this.call(account, 'POST', '/v1/tasks', this.submitTimeoutMs, { contentType: 'application/json', data: JSON.stringify(payload) });
    if (isNoAnswer(answer)) return { kind: 'unavailable', reason: answer.reason, maybeAccepted: answer.sent };
    const { status, headers, body } = answer;
    if (isSuccess(status)) {
      const taskId = field(body, 'id');
      return typeof taskId === 'string' && taskId !== '' ? { kind: 'accepted', taskId } : { kind: 'unavailable', reason: 'accepted without a task id', maybeAccepted: true };
    }
    if (status === 429) return { kind: 'busy', retryAfterS: retryAfterSeconds(headers['retry-after']) };
    if (!isRefusal(status)) return { kind: 'unavailable', reason: `HTTP ${status}`, maybeAccepted: true };
    const error = providerError(body);
    return { kind: 'rejected', errorCode: errorCodeForRefusedSubmission(status, error.type), message: error.message };
  }

  async findTask(account: ProviderAccount, clientReference: string): Promise<TaskLookup> {
    const answer = await this.call(account, 'GET', `/v1/tasks?client_reference=${encodeURIComponent(clientReference)}`, this.lookupTimeoutMs);
    if (isNoAnswer(answer)) return unavailable(answer.reason);
    if (!isSuccess(answer.status)) return unavailable(`HTTP ${answer.status}`);
    const tasks = field(answer.body, 'data');
    if (!Array.isArray(tasks)) return unavailable('lookup answered without a task list');
    const taskId = field(tasks[0], 'id');
    return typeof taskId === 'string' && taskId !== '' ? { kind: 'found', taskId } : { kind: 'absent' };
  }

  async poll(account: ProviderAccount, taskId: string): Promise<PollOutcome> {
    const answer = await this.call(account, 'GET', `/v1/tasks/${encodeURIComponent(taskId)}`, this.pollTimeoutMs);
    if (isNoAnswer(answer)) return unavailable(answer.reason);
    const { status, body } = answer;
    if (isRefusal(status)) return { kind: 'failed', errorCode: errorCodeForRefusedPoll(status), message: providerError(body).message };
    if (!isSuccess(status)) return unavailable(`HTTP ${status}`);
    return simulatorTaskOutcome(body);
  }

  outcomeOfCallback(answer: unknown): PollOutcome {
    return simulatorTaskOutcome(answer);
  }

  fetchResult(url: string): Promise<ProviderResult> {
    return downloadResult(url, { timeoutMs: this.resultTimeoutMs, maxBytes: this.resultMaxBytes });
  }

  /** `POST /v1/files` with the photo as the body; `201 { url, expires_at }`. */
  async stageFile(account: ProviderAccount, file: FileToStage): Promise<StageOutcome> {
    const answer = await this.call(account, 'POST', '/v1/files', this.stageTimeoutMs, { contentType: file.contentType, data: file.body });
    if (isNoAnswer(answer)) return unavailable(answer.reason);
    if (!isSuccess(answer.status)) return unavailable(`HTTP ${answer.status}`);
    const url = field(answer.body, 'url');
    const expiresAt = field(answer.body, 'expires_at');
    const expiry = typeof expiresAt === 'string' ? new Date(expiresAt) : null;
    if (typeof url !== 'string' || !/^https?:\/\//.test(url)) return unavailable('staged without a file link');
    if (expiry === null || Number.isNaN(expiry.getTime())) return unavailable('staged without an expiry');
    return { kind: 'staged', url, expiresAt: expiry };
  }

  private call(account: ProviderAccount, method: 'GET' | 'POST', path: string, timeoutMs: number, body?: { contentType: string; data: string | Buffer }): Promise<Answer | NoAnswer> {
    return callProvider(`${this.baseUrl}${path}`, { method, headers: { authorization: `Bearer ${account.apiKey}` }, body, timeoutMs });
  }
}

function unavailable(reason: string): Unavailable {
  return { kind: 'unavailable', reason };
}

/** A task as `GET /v1/tasks/{id}` and its callback show it, as the pool reads it. */
export function simulatorTaskOutcome(task: unknown): PollOutcome {
  const taskStatus = field(task, 'status');
  switch (taskStatus) {
    case 'queued':
    case 'running':
      return { kind: 'running' };
    case 'succeeded': {
      const url = field(field(task, 'result'), 'url');
      return { kind: 'succeeded', resultUrl: typeof url === 'string' && url !== '' ? url : null };
    }
    case 'failed': {
      const error = providerError(task);
      return { kind: 'failed', errorCode: errorCodeForFailedTask(error.type), message: error.message };
    }
    default:
      return unavailable(`unknown task status ${JSON.stringify(taskStatus)}`);
  }
}

function providerError(body: unknown): { type: string | null; message: string | null } {
  const error = field(body, 'error');
  const type = field(error, 'type');
  const message = field(error, 'message');
  return { type: typeof type === 'string' ? type : null, message: typeof message === 'string' ? message : null };
}
