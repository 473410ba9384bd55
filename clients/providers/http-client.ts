import { ResultTooLargeError, type PollOutcome, type ProviderAccount, type ProviderAdapter, type ProviderRequest, type ProviderResult, type FileToStage, type StageOutcome, type SubmitOutcome, type TaskLookup } from './adapter';
import { errorCodeForFailedTask, errorCodeForRefusedPoll, errorCodeForRefusedSubmission } from './error-codes';
import { AnswerTooLargeError, download, exchange, isSuccess, NoAnswerError } from '../outbound-http';

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

const DEFAULT_RESULT_MAX_BYTES = 512 * 1024 * 1024;

/** Cooldown for a 429 that does not say how long to wait. */
const DEFAULT_RETRY_AFTER_S = 5;

type Unavailable = { kind: 'unavailable'; reason: string };
/** A call that got no answer; `sent`: the request may have reached the provider. */
type NoAnswer = Unavailable & { sent: boolean };

/** A request's body and its media type. */
interface RequestBody {
  contentType: string;
  data: string | Buffer;
}

interface Answer {
  status: number;
  retryAfter: string | undefined;
  body: unknown;
}

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
    if ('kind' in answer) return { kind: 'unavailable', reason: answer.reason, maybeAccepted: answer.sent };
    const { status, retryAfter, body } = answer;
    if (isSuccess(status)) {
      const taskId = field(body, 'id');
      return typeof taskId === 'string' && taskId !== '' ? { kind: 'accepted', taskId } : { kind: 'unavailable', reason: 'accepted without a task id', maybeAccepted: true };
    }
    if (status === 429) return { kind: 'busy', retryAfterS: retryAfterSeconds(retryAfter) };
    if (!isRefusal(status)) return { kind: 'unavailable', reason: `HTTP ${status}`, maybeAccepted: true };
    const error = providerError(body);
    return { kind: 'rejected', errorCode: errorCodeForRefusedSubmission(status, error.type), message: error.message };
  }

  async findTask(account: ProviderAccount, clientReference: string): Promise<TaskLookup> {
    const answer = await this.call(account, 'GET', `/v1/tasks?client_reference=${encodeURIComponent(clientReference)}`, this.lookupTimeoutMs);
    if ('kind' in answer) return unavailable(answer.reason);
    if (!isSuccess(answer.status)) return unavailable(`HTTP ${answer.status}`);
    const tasks = field(answer.body, 'data');
    if (!Array.isArray(tasks)) return unavailable('lookup answered without a task list');
    const taskId = field(tasks[0], 'id');
    return typeof taskId === 'string' && taskId !== '' ? { kind: 'found', taskId } : { kind: 'absent' };
  }

  async poll(account: ProviderAccount, taskId: string): Promise<PollOutcome> {
    const answer = await this.call(account, 'GET', `/v1/tasks/${encodeURIComponent(taskId)}`, this.pollTimeoutMs);
    if ('kind' in answer) return unavailable(answer.reason);
    const { status, body } = answer;
    if (isRefusal(status)) return { kind: 'failed', errorCode: errorCodeForRefusedPoll(status), message: providerError(body).message };
    if (!isSuccess(status)) return unavailable(`HTTP ${status}`);
    const taskStatus = field(body, 'status');
    switch (taskStatus) {
      case 'queued':
      case 'running':
        return { kind: 'running' };
      case 'succeeded': {
        const url = field(field(body, 'result'), 'url');
        return { kind: 'succeeded', resultUrl: typeof url === 'string' && url !== '' ? url : null };
      }
      case 'failed': {
        const error = providerError(body);
        return { kind: 'failed', errorCode: errorCodeForFailedTask(error.type), message: error.message };
      }
      default:
        return unavailable(`unknown task status ${JSON.stringify(taskStatus)}`);
    }
  }

  async fetchResult(url: string): Promise<ProviderResult> {
    const response = await download(url, { timeoutMs: this.resultTimeoutMs, maxBytes: this.resultMaxBytes }).catch((error: unknown) => {
      throw error instanceof AnswerTooLargeError ? new ResultTooLargeError(error.message) : error;
    });
    if (!isSuccess(response.status)) throw new Error(`result download answered HTTP ${response.status}`);
    return { body: response.body, contentType: mediaType(response.headers['content-type']) };
  }

  /** `POST /v1/files` with the photo as the body; `201 { url, expires_at }`. */
  async stageFile(account: ProviderAccount, file: FileToStage): Promise<StageOutcome> {
    const answer = await this.call(account, 'POST', '/v1/files', this.stageTimeoutMs, { contentType: file.contentType, data: file.body });
    if ('kind' in answer) return unavailable(answer.reason);
    if (!isSuccess(answer.status)) return unavailable(`HTTP ${answer.status}`);
    const url = field(answer.body, 'url');
    const expiresAt = field(answer.body, 'expires_at');
    const expiry = typeof expiresAt === 'string' ? new Date(expiresAt) : null;
    if (typeof url !== 'string' || !/^https?:\/\//.test(url)) return unavailable('staged without a file link');
    if (expiry === null || Number.isNaN(expiry.getTime())) return unavailable('staged without an expiry');
    return { kind: 'staged', url, expiresAt: expiry };
  }

  private async call(
    account: ProviderAccount,
    method: 'GET' | 'POST',
    path: string,
    timeoutMs: number,
    body?: RequestBody,
  ): Promise<Answer | NoAnswer> {
    try {
      const response = await exchange(`${this.baseUrl}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${account.apiKey}`,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': body.contentType }),
        },
        body: body?.data,
        timeoutMs,
      });
      return { status: response.status, retryAfter: response.headers['retry-after'], body: parseJson(response.body.toString()) };
    } catch (error) {
      if (error instanceof NoAnswerError) return { kind: 'unavailable', reason: error.message, sent: error.sent };
      throw error;
    }
  }
}

function unavailable(reason: string): Unavailable {
  return { kind: 'unavailable', reason };
}

/** A final 4xx; 408 and 429 only mean "not now". */
function isRefusal(status: number): boolean {
  return status >= 400 && status < 500 && status !== 408 && status !== 429;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

function field(value: unknown, name: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[name] : undefined;
}

function providerError(body: unknown): { type: string | null; message: string | null } {
  const error = field(body, 'error');
  const type = field(error, 'type');
  const message = field(error, 'message');
  return { type: typeof type === 'string' ? type : null, message: typeof message === 'string' ? message : null };
}

/** Retry-After is either seconds or an HTTP date; a 429 always means waiting at least a second. */
function retryAfterSeconds(header: string | undefined): number {
  if (header === undefined || header.trim() === '') return DEFAULT_RETRY_AFTER_S;
  const seconds = /^\d+(\.\d+)?$/.test(header.trim()) ? Number(header) : (Date.parse(header) - Date.now()) / 1000;
  return Number.isNaN(seconds) ? DEFAULT_RETRY_AFTER_S : Math.max(1, Math.ceil(seconds));
}

function mediaType(header: string | undefined): string {
  const type = header?.split(';')[0].trim().toLowerCase();
  return type || 'application/octet-stream';
}
