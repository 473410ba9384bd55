import type http from 'node:http';
import type { ProviderInput } from '../../clients/providers/adapter';
import { keyOf, MAX_BODY_BYTES, readBytes, readJson, sendFile, sendJson } from './http-exchange';
import { MAX_PHOTO_BYTES } from './input-photo';
import type { Task, TaskEngine } from './task-engine';
import { transcribe } from './transcription';

/**
 * The simulator's own protocol (`clients/providers/http-client.ts`): `POST /v1/tasks` with a
 * `client_reference` the account keeps one task for and an optional `callback_url`, `GET /v1/tasks/{id}`,
 * `GET /v1/tasks?client_reference=`, the file store `POST /v1/files` and `GET /v1/files/{id}`, and the
 * speech endpoint `POST /v1/transcriptions`, also in the shape of OpenAI's `POST /v1/audio/transcriptions`.
 */

/** Two minutes of 16 kHz mono 16-bit PCM is 3.84 MB. */
const MAX_AUDIO_BYTES = 8 * 1024 * 1024;
const MAX_PROMPT_LENGTH = 20_000;
const MAX_INPUTS = 16;
const MAX_REFERENCE_LENGTH = 200;

/** A task request as the simulator reads it. */
interface NativeRequest {
  model: string;
  inputs: ProviderInput[];
  prompt?: string;
  clientReference: string | null;
  callbackUrl?: string;
}

export class NativeFront {
  constructor(private readonly engine: TaskEngine) {}

  /** Answers the request when it is one of this protocol's; false otherwise. */
  async handle(req: http.IncomingMessage, res: http.ServerResponse, pathname: string): Promise<boolean> {
    const taskPath = /^\/v1\/tasks\/([^/]+)$/.exec(pathname);
    const filePath = /^\/v1\/files\/([^/]+)$/.exec(pathname);
    if (req.method === 'POST' && pathname === '/v1/tasks') await this.submit(req, res);
    else if (req.method === 'POST' && pathname === '/v1/files') await this.stageFile(req, res);
    else if (req.method === 'GET' && filePath) await this.serveFile(res, filePath[1]);
    else if (req.method === 'GET' && pathname === '/v1/tasks') this.findByReference(req, res);
    else if (req.method === 'POST' && pathname === '/v1/transcriptions') await this.transcribe(req, res);
    else if (req.method === 'POST' && pathname === '/v1/audio/transcriptions') await this.transcribeAsOpenAi(req, res);
    else if (req.method === 'GET' && taskPath) this.show(req, res, taskPath[1]);
    else return false;
    return true;
  }

  private authenticate(req: http.IncomingMessage): string | null {
    return this.engine.authenticate(keyOf(req, 'Bearer'));
  }

  private async submit(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const apiKey = this.authenticate(req);
    if (apiKey === null) return sendError(res, 401, 'unauthorized', 'unknown API key');
    const request = parseTaskRequest(await readJson(req));
    if (typeof request === 'string') return sendError(res, 400, 'invalid_request', request);
    const started = await this.engine.start(apiKey, {
      model: request.model,
      photoUrls: request.inputs.map((input) => input.url),
      prompt: request.prompt ?? '',
      clientReference: request.clientReference,
      webhookUrl: request.callbackUrl ?? null,
      front: {},
      callback: request.callbackUrl === undefined ? null : (task) => ({ url: request.callbackUrl!, body: JSON.stringify(this.view(task)), headers: {} }),
    });
    switch (started.kind) {
      case 'accepted':
        return sendJson(res, 202, { id: started.task.id, status: 'queued' });
      case 'repeated':
        return sendJson(res, 200, this.view(started.task));
      case 'busy':
        return sendJson(res, 429, { error: { type: 'rate_limited', message: 'the account runs its concurrency cap of tasks' } }, { 'retry-after': String(started.retryAfterS) });
      case 'no_model':
        return sendError(res, 404, 'no_model', `no model ${request.model}`);
      case 'needs_photo':
        return sendError(res, 400, 'invalid_request', `model ${request.model} needs a photo`);
      case 'bad_input_image':
        return sendError(res, 400, 'bad_input_image', started.message);
    }
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
    const file = await this.engine.stage(body, req.headers['content-type'] ?? 'application/octet-stream');
    sendJson(res, 201, { id: file.id, url: `${this.engine.url}/v1/files/${file.id}`, expires_at: new Date(file.expiresAt).toISOString() });
  }

  private async serveFile(res: http.ServerResponse, id: string): Promise<void> {
    const file = this.engine.files.get(id);
    if (!file || !(await sendFile(res, this.engine.files.pathOf(id), file.contentType))) sendError(res, 404, 'not_found', 'no such file');
  }

  /** `GET /v1/tasks?client_reference=`: the account's task of that reference, as a list of at most one. */
  private findByReference(req: http.IncomingMessage, res: http.ServerResponse): void {
    const apiKey = this.authenticate(req);
    if (apiKey === null) return sendError(res, 401, 'unauthorized', 'unknown API key');
    const clientReference = new URL(req.url ?? '/', 'http://simulator').searchParams.get('client_reference');
    if (!clientReference) return sendError(res, 400, 'invalid_request', 'client_reference is required');
    const task = this.engine.taskOfReference(apiKey, clientReference);
    sendJson(res, 200, { data: task ? [this.view(task)] : [] });
  }

  /** The speech endpoint: a 16-bit PCM WAV in, its transcript out, at once (docs/mobile.md, "Studio, voice input, queue position and cancel"). */
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
   * The same recognition in the shape of OpenAI's `POST /v1/audio/transcriptions`: multipart with the
   * recording in `file`, `model`, optional `language`, `response_format` `json` (the default) answered
   * `{text}`, as a service configured with TRANSCRIPTION_URL speaks it.
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
    const task = this.engine.task(taskId, apiKey);
    if (!task) return sendError(res, 404, 'not_found', 'no such task');
    this.engine.polled(task);
    sendJson(res, 200, this.view(task));
  }

  /** A task as `GET /v1/tasks/{id}` and the callback show it. */
  private view(task: Task): object {
    const { state } = task;
    return {
      id: task.id,
      client_reference: task.clientReference,
      status: state.status,
      result: state.status === 'succeeded' ? { url: this.engine.resultUrl(state.result.fileName), content_type: state.result.contentType } : null,
      error: state.status === 'failed' ? state.error : null,
    };
  }
}

export function sendError(res: http.ServerResponse, status: number, type: string, message: string): void {
  sendJson(res, status, { error: { type, message } });
}

/** The task request, or what is wrong with it. */
function parseTaskRequest(body: unknown): NativeRequest | string {
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
