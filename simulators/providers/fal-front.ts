import { createHash, generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import type http from 'node:http';
import { falSignedMessage } from '../../clients/providers/fal-webhook';
import { keyOf, modelInputOf, readBytes, readJson, sendFile, sendJson } from './http-exchange';
import { MAX_PHOTO_BYTES } from './input-photo';
import type { Task, TaskEngine } from './task-engine';

/**
 * fal's queue over the simulator's tasks (as fal's client speaks it, `@fal-ai/client` queue.ts and
 * storage.ts): `POST /fal/queue/{app id}?fal_webhook=` runs the simulator's model named by the app's
 * alias (`sim/image` and `sim/image/fast` are `image`); `GET /fal/queue/{owner}/{alias}/requests/{id}/status`,
 * `GET .../requests/{id}` (the result), `PUT .../requests/{id}/cancel`; storage
 * `POST /fal/rest/storage/upload/initiate` then `PUT` to its upload link; the webhook keys at
 * `/fal/rest/.well-known/jwks.json`. A result is `{images: [{url, content_type}]}` for an image,
 * `{video: {url, content_type}}` for a video, `{output: text}` for a text model (as fal's language and
 * vision routers answer); a failure is fal's `{detail}` (422 `content_policy_violation` for the safety
 * model, 422 `image_load_error` for a photo it cannot read, 500 otherwise). The webhook is
 * `{request_id, gateway_request_id, status: OK | ERROR, payload, error}`, signed with the simulator's
 * ED25519 key as fal documents.
 */
export class FalFront {
  private readonly keys = generateKeyPairSync('ed25519');
  private readonly keyId = randomUUID();
  /** Upload links given out and not used yet, by token: the file's media type. */
  private readonly uploads = new Map<string, string>();

  constructor(private readonly engine: TaskEngine) {}

  /** The simulator's JWKS, as fal's `/.well-known/jwks.json`. */
  jwks(): object {
    return { keys: [{ ...this.keys.publicKey.export({ format: 'jwk' }), kid: this.keyId, use: 'sig', alg: 'EdDSA' }] };
  }

  /** `pathname` without `/fal`. */
  async handle(req: http.IncomingMessage, res: http.ServerResponse, pathname: string): Promise<void> {
    if (req.method === 'GET' && pathname === '/rest/.well-known/jwks.json') return sendJson(res, 200, this.jwks());
    const upload = /^\/upload\/([0-9a-f-]{36})$/.exec(pathname);
    if (req.method === 'PUT' && upload) return this.receiveUpload(req, res, upload[1]);
    const file = /^\/files\/([0-9a-f-]{36})$/.exec(pathname);
    if (req.method === 'GET' && file) return this.serveFile(res, file[1]);
    const apiKey = this.engine.authenticate(keyOf(req, 'Key'));
    if (apiKey === null) return detail(res, 401, 'Unauthorized');
    if (req.method === 'POST' && pathname === '/rest/storage/upload/initiate') return this.initiateUpload(req, res);
    const request = /^\/queue\/((?:(?:workflows|comfy)\/)?[^/]+\/[^/]+)\/requests\/([^/]+)(\/status|\/cancel)?$/.exec(pathname);
    if (request) {
      const task = this.engine.task(request[2], apiKey);
      if (!task || task.front.app !== request[1]) return detail(res, 404, 'Request not found');
      if (req.method === 'GET' && request[3] === '/status') return this.status(res, task);
      if (req.method === 'GET' && request[3] === undefined) return this.result(res, task);
      if (req.method === 'PUT' && request[3] === '/cancel') return this.cancel(res, task);
    }
    const submit = /^\/queue\/((?:(?:workflows|comfy)\/)?([^/]+)\/([^/]+))(?:\/[^/]+)*$/.exec(pathname);
    if (req.method === 'POST' && submit) return this.submit(req, res, apiKey, submit[1], submit[3]);
    detail(res, 404, 'Not found');
  }

  private async submit(req: http.IncomingMessage, res: http.ServerResponse, apiKey: string, app: string, model: string): Promise<void> {
    const input = await readJson(req);
    if (typeof input !== 'object' || input === null || Array.isArray(input)) return validation(res, 'body', 'a JSON object is required', 'value_error');
    const webhook = new URL(req.url ?? '/', 'http://simulator').searchParams.get('fal_webhook');
    const started = await this.engine.start(apiKey, {
      model,
      ...modelInputOf(input),
      clientReference: null,
      webhookUrl: webhook,
      front: { app },
      callback: webhook === null ? null : (task) => this.webhookCall(task, webhook),
    });
    switch (started.kind) {
      case 'accepted':
      case 'repeated':
        return sendJson(res, 200, { ...this.urls(started.task), request_id: started.task.id, gateway_request_id: started.task.id, status: 'IN_QUEUE', queue_position: 0 });
      case 'busy':
        return detail(res, 429, 'Too many concurrent requests', { 'retry-after': String(started.retryAfterS) });
      case 'no_model':
        return detail(res, 404, `Application '${model}' not found`);
      case 'needs_photo':
        return validation(res, 'image_url', 'field required', 'value_error.missing');
      case 'bad_input_image':
        return validation(res, 'image_url', started.message, 'image_load_error');
    }
  }

  private status(res: http.ServerResponse, task: Task): void {
    this.engine.polled(task);
    const { state } = task;
    const body = { ...this.urls(task), request_id: task.id, status: state.status === 'running' ? 'IN_PROGRESS' : 'COMPLETED', logs: null };
    sendJson(res, 200, state.status === 'canceled' ? { ...body, error: 'Request was cancelled', error_type: 'request_cancelled' } : body);
  }

  private result(res: http.ServerResponse, task: Task): void {
    const { state } = task;
    if (state.status === 'running') return detail(res, 400, 'Request is still in progress');
    if (state.status === 'succeeded') return sendJson(res, 200, this.output(state.result));
    if (state.status === 'canceled') return detail(res, 400, 'Request was cancelled');
    if (state.error.type === 'safety') return validation(res, 'prompt', 'The content was flagged by a content checker.', 'content_policy_violation');
    if (state.error.type === 'bad_input_image') return validation(res, 'image_url', state.error.message, 'image_load_error');
    detail(res, 500, state.error.message);
  }

  private cancel(res: http.ServerResponse, task: Task): void {
    if (this.engine.cancel(task)) return sendJson(res, 202, { status: 'CANCELLATION_REQUESTED' });
    sendJson(res, 400, { status: 'ALREADY_COMPLETED' });
  }

  /** `POST /storage/upload/initiate`: a one-time upload link and the link the file will have. */
  private async initiateUpload(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const body = await readJson(req);
    const contentType = (body as { content_type?: unknown } | undefined)?.content_type;
    if (typeof contentType !== 'string') return validation(res, 'content_type', 'field required', 'value_error.missing');
    const token = randomUUID();
    this.uploads.set(token, contentType);
    sendJson(res, 200, { upload_url: `${this.engine.url}/fal/upload/${token}`, file_url: `${this.engine.url}/fal/files/${token}` });
  }

  private async receiveUpload(req: http.IncomingMessage, res: http.ServerResponse, token: string): Promise<void> {
    const contentType = this.uploads.get(token);
    if (contentType === undefined) return detail(res, 404, 'No such upload');
    const body = await readBytes(req, MAX_PHOTO_BYTES);
    if (body === null) return detail(res, 413, 'File too large');
    this.uploads.delete(token);
    await this.engine.stage(body, contentType, token);
    res.writeHead(200).end();
  }

  private async serveFile(res: http.ServerResponse, id: string): Promise<void> {
    const file = this.engine.files.get(id);
    if (!file || !(await sendFile(res, this.engine.files.pathOf(id), file.contentType))) detail(res, 404, 'File not found');
  }

  private urls(task: Task): { response_url: string; status_url: string; cancel_url: string } {
    const base = `${this.engine.url}/fal/queue/${String(task.front.app)}/requests/${task.id}`;
    return { response_url: base, status_url: `${base}/status`, cancel_url: `${base}/cancel` };
  }

  private output({ fileName, contentType, text }: { fileName: string; contentType: string; text?: string }): object {
    if (text !== undefined) return { output: text };
    const file = { url: this.engine.resultUrl(fileName), content_type: contentType };
    // Every simulated model that answers no text makes an image or a video (`models.ts`).
    return contentType.startsWith('image/') ? { images: [file], has_nsfw_concepts: [false], seed: 42 } : { video: file };
  }

  private webhookCall(task: Task, url: string): { url: string; body: string; headers: Record<string, string> } {
    const { state } = task;
    const outcome = state.status === 'succeeded'
      ? { status: 'OK', payload: this.output(state.result) }
      : state.status === 'failed' && state.error.type === 'safety'
        ? { status: 'ERROR', error: 'Invalid status code: 422', payload: { detail: [{ loc: ['body', 'prompt'], msg: 'The content was flagged by a content checker.', type: 'content_policy_violation' }] } }
        : { status: 'ERROR', error: state.status === 'canceled' ? 'Request was cancelled' : 'Invalid status code: 500', payload: { detail: state.status === 'failed' ? state.error.message : 'cancelled' } };
    const body = JSON.stringify({ request_id: task.id, gateway_request_id: task.id, ...outcome });
    const userId = `sim|${createHash('sha256').update(task.apiKey).digest('hex').slice(0, 12)}`;
    const timestamp = String(Math.floor(Date.now() / 1000));
    const signature = sign(null, falSignedMessage(task.id, userId, timestamp, body), this.keys.privateKey).toString('hex');
    return {
      url,
      body,
      headers: { 'x-fal-webhook-request-id': task.id, 'x-fal-webhook-user-id': userId, 'x-fal-webhook-timestamp': timestamp, 'x-fal-webhook-signature': signature },
    };
  }
}

function detail(res: http.ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  sendJson(res, status, { detail: message }, headers);
}

function validation(res: http.ServerResponse, field: string, message: string, type: string): void {
  sendJson(res, 422, { detail: [{ loc: ['body', field], msg: message, type }] });
}
