import { createHmac, randomUUID } from 'node:crypto';
import type http from 'node:http';
import Busboy from 'busboy';
import { standardWebhookSignature } from '../../clients/providers/replicate-webhook';
import { keyOf, modelInputOf, readJson, sendJson } from './http-exchange';
import { MAX_PHOTO_BYTES } from './input-photo';
import type { Task, TaskEngine } from './task-engine';

/**
 * Replicate's HTTP API over the simulator's tasks, under `/replicate/v1` (Replicate's OpenAPI
 * document): `POST /models/{owner}/{name}/predictions` runs the simulator's model `{name}` (`sim/image`
 * is `image`), `GET /predictions/{id}`, `GET /predictions` (newest first, 100 a page, `created_after`,
 * `next`), `POST /predictions/{id}/cancel`, `POST /files` (multipart `content`), and
 * `GET /webhooks/default/secret`. A prediction's photos are the links of its `input`, its prompt
 * `input.prompt`; its output is the result's link, or a text model's answer as a list of tokens (as
 * Replicate's language models answer, their final output being the streamed tokens). Its `webhook` is POSTed the prediction when it ends
 * (`completed`), signed as Standard Webhooks with the account's secret. Errors are problem documents
 * (`{title, detail, status}`); a 429 names its wait in `Retry-After` and its detail.
 */
const PAGE_SIZE = 100;

export class ReplicateFront {
  /** Each account's webhook secret derives from this one, so it is stable for the simulator's life. */
  private readonly secretSeed = randomUUID();

  constructor(private readonly engine: TaskEngine) {}

  /** The account's signing secret, as `GET /webhooks/default/secret` answers it. */
  secretOf(apiKey: string): string {
    return `whsec_${createHmac('sha256', this.secretSeed).update(apiKey).digest('base64')}`;
  }

  async handle(req: http.IncomingMessage, res: http.ServerResponse, pathname: string): Promise<void> {
    const apiKey = this.engine.authenticate(keyOf(req, 'Bearer'));
    if (apiKey === null) return problem(res, 401, 'Invalid token.');
    const create = /^\/models\/([^/]+)\/([^/]+)\/predictions$/.exec(pathname);
    const one = /^\/predictions\/([^/]+)$/.exec(pathname);
    const cancel = /^\/predictions\/([^/]+)\/cancel$/.exec(pathname);
    if (req.method === 'POST' && create) return this.create(req, res, apiKey, `${create[1]}/${create[2]}`, create[2]);
    if (req.method === 'POST' && pathname === '/predictions') return problem(res, 404, 'The simulator runs official models only: POST /models/{owner}/{name}/predictions.');
    if (req.method === 'GET' && pathname === '/predictions') return this.list(req, res, apiKey);
    if (req.method === 'GET' && one) return this.show(res, apiKey, one[1]);
    if (req.method === 'POST' && cancel) return this.cancel(res, apiKey, cancel[1]);
    if (req.method === 'POST' && pathname === '/files') return this.stageFile(req, res);
    if (req.method === 'GET' && pathname === '/webhooks/default/secret') return sendJson(res, 200, { key: this.secretOf(apiKey) });
    problem(res, 404, 'Not found.');
  }

  private async create(req: http.IncomingMessage, res: http.ServerResponse, apiKey: string, modelName: string, model: string): Promise<void> {
    const body = await readJson(req);
    const input = (body as { input?: unknown } | undefined)?.input;
    if (typeof input !== 'object' || input === null || Array.isArray(input)) return problem(res, 422, 'input: an object is required');
    const { webhook, webhook_events_filter: filter } = body as { webhook?: unknown; webhook_events_filter?: unknown };
    if (webhook !== undefined && (typeof webhook !== 'string' || !/^https?:\/\//.test(webhook))) return problem(res, 422, 'webhook: must be a URL');
    const completed = filter === undefined || (Array.isArray(filter) && filter.includes('completed'));
    const started = await this.engine.start(apiKey, {
      model,
      ...modelInputOf(input),
      clientReference: null,
      webhookUrl: typeof webhook === 'string' ? webhook : null,
      front: { model: modelName, input, webhook: webhook ?? null, filter: filter ?? null },
      callback: typeof webhook === 'string' && completed ? (task) => this.webhookCall(task, webhook) : null,
    });
    switch (started.kind) {
      case 'accepted':
      case 'repeated':
        return sendJson(res, 201, this.view(started.task));
      case 'busy':
        return problem(res, 429, `Request was throttled. Expected available in ${started.retryAfterS} seconds.`, { 'retry-after': String(started.retryAfterS) });
      case 'no_model':
        return problem(res, 404, `Model ${modelName} not found.`);
      case 'needs_photo':
        return problem(res, 422, 'input: a photo link is required');
      case 'bad_input_image':
        return problem(res, 422, `input: ${started.message}`);
    }
  }

  /** Newest first, 100 a page; `cursor` is the index of the page's first prediction. */
  private list(req: http.IncomingMessage, res: http.ServerResponse, apiKey: string): void {
    const query = new URL(req.url ?? '/', 'http://simulator').searchParams;
    const after = query.get('created_after');
    const since = after === null ? 0 : Date.parse(after);
    if (Number.isNaN(since)) return problem(res, 400, 'created_after: not a date-time');
    const from = Number(query.get('cursor') ?? 0);
    const tasks = this.engine.tasksOf(apiKey).filter((task) => task.createdAt >= since);
    const page = tasks.slice(from, from + PAGE_SIZE);
    const next = from + PAGE_SIZE < tasks.length ? `${this.base()}/predictions?${new URLSearchParams({ ...(after === null ? {} : { created_after: after }), cursor: String(from + PAGE_SIZE) })}` : null;
    sendJson(res, 200, { next, previous: null, results: page.map((task) => this.view(task)) });
  }

  private show(res: http.ServerResponse, apiKey: string, id: string): void {
    const task = this.engine.task(id, apiKey);
    if (!task) return problem(res, 404, 'Not found.');
    this.engine.polled(task);
    sendJson(res, 200, this.view(task));
  }

  private cancel(res: http.ServerResponse, apiKey: string, id: string): void {
    const task = this.engine.task(id, apiKey);
    if (!task) return problem(res, 404, 'Not found.');
    this.engine.cancel(task);
    sendJson(res, 200, this.view(task));
  }

  /** `POST /files`: the multipart `content` kept in the store; `urls.get` is the link predictions read. */
  private async stageFile(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const content = await multipartContent(req).catch(() => null);
    if (content === null) return problem(res, 400, 'content: a file is required');
    if (content === 'too_large') return problem(res, 413, 'Files must be less than 100MB in size');
    const file = await this.engine.stage(content.body, content.contentType);
    sendJson(res, 201, {
      id: file.id,
      urls: { get: `${this.base()}/files/${file.id}` },
      content_type: file.contentType,
      size: content.body.length,
      checksums: {},
      metadata: {},
      created_at: new Date().toISOString(),
      expires_at: new Date(file.expiresAt).toISOString(),
    });
  }

  private base(): string {
    return `${this.engine.url}/replicate/v1`;
  }

  private webhookCall(task: Task, url: string): { url: string; body: string; headers: Record<string, string> } {
    const body = JSON.stringify(this.view(task));
    const id = `msg_${randomUUID().replaceAll('-', '')}`;
    const timestamp = String(Math.floor(Date.now() / 1000));
    return { url, body, headers: { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': standardWebhookSignature(this.secretOf(task.apiKey), id, timestamp, body) } };
  }

  /** A prediction as `GET /predictions/{id}`, the list and the webhook show it. */
  private view(task: Task): object {
    const { state } = task;
    const status = state.status === 'running' ? 'processing' : state.status;
    const error = state.status !== 'failed'
      ? null
      : state.error.type === 'safety' ? 'NSFW content detected. Try running it again, or try a different prompt.' : state.error.message;
    const link = `${this.base()}/predictions/${task.id}`;
    return {
      id: task.id,
      model: task.front.model,
      version: 'hidden',
      input: task.front.input,
      logs: '',
      output: state.status === 'succeeded' ? (state.result.text === undefined ? this.engine.resultUrl(state.result.fileName) : tokens(state.result.text)) : null,
      data_removed: false,
      error,
      status,
      source: 'api',
      created_at: new Date(task.createdAt).toISOString(),
      started_at: new Date(task.createdAt).toISOString(),
      completed_at: task.finishedAt === null ? null : new Date(task.finishedAt).toISOString(),
      urls: { get: link, cancel: `${link}/cancel`, web: `${this.engine.url}/replicate/p/${task.id}` },
      ...(task.front.webhook === null ? {} : { webhook: task.front.webhook, webhook_events_filter: task.front.filter ?? ['start', 'output', 'logs', 'completed'] }),
    };
  }
}

/** Text as a language model streams it: words with the whitespace before them, which join back into the text. */
function tokens(text: string): string[] {
  return text.match(/\s*\S+|\s+/g) ?? [];
}

function problem(res: http.ServerResponse, status: number, detail: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/problem+json', ...headers }).end(JSON.stringify({ title: titleOf(status), detail, status }));
}

function titleOf(status: number): string {
  return ({ 400: 'Bad request', 401: 'Unauthenticated', 404: 'Not found', 413: 'Content too large', 422: 'Input validation failed', 429: 'Too many requests' } as Record<number, string>)[status] ?? 'Error';
}

/** The `content` part of a multipart upload; 'too_large' above the photo limit, null without one. */
function multipartContent(req: http.IncomingMessage): Promise<{ body: Buffer; contentType: string } | 'too_large' | null> {
  return new Promise((resolve, reject) => {
    let found: { body: Buffer; contentType: string } | 'too_large' | null = null;
    const parser = Busboy({ headers: req.headers, limits: { files: 1, fileSize: MAX_PHOTO_BYTES } });
    parser.on('file', (name, stream, info) => {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('limit', () => {
        found = 'too_large';
      });
      stream.on('end', () => {
        if (name === 'content' && found !== 'too_large') found = { body: Buffer.concat(chunks), contentType: info.mimeType };
      });
    });
    parser.on('close', () => resolve(found));
    parser.on('error', reject);
    req.pipe(parser);
  });
}
