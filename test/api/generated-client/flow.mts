// A mobile app's main flow written against a client that tools nobody here wrote generated from
// /v1/openapi.json: types by openapi-typescript (./api.d.ts, made by the test), calls by
// openapi-fetch. The test type-checks this file under `strict` against the generated types, then
// runs it. The annotated assignments below compile only because the document marks those fields
// required and gives their exact types: a field left optional would read `T | undefined` and fail.
// Usage: node flow.mts <base-url> <effect-id> <photo.jpg>
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import createClient from 'openapi-fetch';
import type { components, paths } from './api.js';

type Generation = components['schemas']['Generation'];
type Payment = components['schemas']['Payment'];
// The data of a stream's events, named by the answer's `x-sse-events`.
type GenerationStreamEvent = components['schemas']['GenerationStreamEvent'];

const [baseUrl, effectId, photoPath] = process.argv.slice(2);

/** The answer's data, or a failure naming the error code the service sent. */
function ok<T>(result: { data?: T; error?: { error: { code: string } }; response: Response }): T {
  if (result.data === undefined) throw new Error(`${result.response.url} answered ${result.response.status} ${result.error?.error.code}`);
  return result.data;
}

/** The events of a Server-Sent Events answer (`message` for those without an `event:` line), until the server closes it. */
async function* serverSentEvents(response: Response): AsyncGenerator<{ event: string; data: string }> {
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of response.body!) {
    buffered += decoder.decode(chunk, { stream: true });
    for (let end = buffered.indexOf('\n\n'); end >= 0; end = buffered.indexOf('\n\n')) {
      const lines = buffered.slice(0, end).split('\n');
      buffered = buffered.slice(end + 2);
      const data = lines.filter((line) => line.startsWith('data: ')).map((line) => line.slice('data: '.length)).join('\n');
      const event = lines.find((line) => line.startsWith('event: '))?.slice('event: '.length) ?? 'message';
      if (data) yield { event, data };
    }
  }
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const anonymous = createClient<paths>({ baseUrl });
const deviceId = randomUUID();

// 1. A guest.
const guest = ok(await anonymous.POST('/v1/auth/anonymous', { body: { device_id: deviceId } }));
const startBalance: number = guest.user.balance;
const isGuest: boolean = guest.user.is_anonymous;
let api = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${guest.access_token}` } });

// 2. A photo through the presigned POST, straight to object storage.
const ticket = ok(await api.POST('/v1/uploads', { body: { content_type: 'image/jpeg' } }));
const form = new FormData();
for (const [name, value] of Object.entries(ticket.fields)) form.append(name, value);
form.append('file', new Blob([readFileSync(photoPath)], { type: 'image/jpeg' }), 'photo.jpg');
const stored = await fetch(ticket.url, { method: 'POST', body: form });
if (!stored.ok) throw new Error(`the storage refused the upload: ${stored.status}`);
const upload = ok(await api.GET('/v1/uploads/{id}', { params: { path: { id: ticket.id } } }));
const uploadStatus: 'pending' | 'completed' = upload.status;

// 3. A generation, to `succeeded`.
const effect = ok(await api.GET('/v1/effects/{id_or_slug}', { params: { path: { id_or_slug: effectId } } }));
const cost: number = effect.cost;
const accepted = ok(await api.POST('/v1/generations', {
  params: { header: { 'Idempotency-Key': randomUUID() } },
  body: { effect_id: effect.id, characters: [[ticket.id]] },
}));
// Followed on its stream, which the server closes at the final status; then the detail for the result.
const stream = await fetch(`${baseUrl}/v1/generations/${accepted.id}/stream`, { headers: { Authorization: `Bearer ${guest.access_token}` } });
const streamed: GenerationStreamEvent['status'][] = [];
for await (const { event, data } of serverSentEvents(stream)) {
  const update: GenerationStreamEvent = JSON.parse(data);
  if (event === 'status' && update.id === accepted.id) streamed.push(update.status);
}
const finished: Generation = ok(await api.GET('/v1/generations/{id}', { params: { path: { id: accepted.id } } }));
const resultUrl: string | null = finished.result_url;
const result = resultUrl === null ? null : await fetch(resultUrl);
const history = ok(await api.GET('/v1/generations', { params: { query: { limit: 10 } } }));
const listed: string[] = history.items.map((item) => item.id);

// An error answer is typed too: the envelope with its code.
const missing = await api.GET('/v1/generations/{id}', { params: { path: { id: randomUUID() } } });
const missingCode: string | undefined = missing.error?.error.code;

// 4. Registration keeps the account; then a payment through the processor's page.
const registered = ok(await api.POST('/v1/auth/register', {
  body: { email: `flow-${deviceId}@example.com`, password: 'correct horse battery', device_id: deviceId },
}));
api = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${registered.access_token}` } });
const products = ok(await api.GET('/v1/payments/products', {}));
const product = products.items[0];
const created = ok(await api.POST('/v1/payments', {
  params: { header: { 'Idempotency-Key': randomUUID() } },
  body: { product_id: product.id, method: 'card' },
}));
const paymentUrl: string = created.payment_url;
const page = await fetch(paymentUrl);
await page.text();
// The payer picks "success" on the simulator's payment page (its form posts back to the same URL).
const paid = await fetch(paymentUrl, { method: 'POST', body: new URLSearchParams({ outcome: 'success' }), redirect: 'manual' });
await paid.text();
const payment: Payment = await until(
  async () => ok(await api.POST('/v1/payments/{id}/refresh', { params: { path: { id: created.id } } })),
  (current) => current.status === 'succeeded',
);
const balance = ok(await api.GET('/v1/credits/balance', {}));

process.stdout.write(`${JSON.stringify({
  guest: { isGuest, startBalance, sameUser: registered.user.id === guest.user.id },
  upload: uploadStatus,
  generation: {
    status: finished.status,
    streamed,
    cost,
    resultStatus: result?.status ?? null,
    resultType: result?.headers.get('content-type') ?? null,
    preview: finished.preview !== null,
    listed: listed.includes(accepted.id),
  },
  missingCode,
  payment: { pageStatus: page.status, status: payment.status, credits: payment.credits, paidAt: payment.paid_at },
  balance: balance.balance,
})}\n`);
