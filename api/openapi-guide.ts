/**
 * The introduction of `/v1/openapi.json` and `/docs`: what a mobile developer needs beyond the
 * operations themselves (Markdown, shown above the operations by the reference page).
 */
export const apiGuide = `
The API behind the Effects app: users turn their photos into AI-generated images and videos through
catalog effects, paying with credits. Every path starts with \`/v1\`; bodies are JSON unless an
operation says otherwise; every answer carries an \`X-Request-Id\` header (quote it when reporting a
problem). The dated list of changes is the [API changelog](/docs/changelog).

## Accounts and tokens

- **Start as a guest.** On first launch, generate a random \`device_id\` (at most 255 characters),
  keep it in the platform's secure storage and call \`POST /v1/auth/anonymous\`. Whoever presents a
  guest's \`device_id\` gets that guest's account, so never derive it from anything guessable. A new
  device gets the start credits once for its lifetime (read the amount from \`user.balance\`).
- **Register later** with \`POST /v1/auth/register\` or a provider sign-in (\`/v1/auth/idp_a\` …
  \`idp_d\`) while sending the guest's access token: the guest becomes a full account under the same
  \`user.id\`, keeping its balance, uploads and generations, with the welcome credits on top. Signing
  in to an account that already exists signs into that account instead; the guest's things stay
  with the guest.
- **Send \`device_id\`** with every sign-in, refresh, change of password and push-device
  registration: sessions are per device, and referral bonuses and the login guard rely on it.
- **Tokens.** Every sign-in answers a TokenResponse: \`access_token\` (about 15 minutes,
  \`expires_in\` seconds), \`refresh_token\` (about 30 days) and the \`user\`. Send
  \`Authorization: Bearer <access_token>\`. On \`401 auth_required\` call \`POST /v1/auth/refresh\`
  **once** (serialize parallel refreshes: the first use of a refresh token replaces it, and a
  replaced token presented again ends every session of the user), then retry the request; if the
  refresh answers 401 too, the user signs in again. \`403 registration_required\` is not an
  authentication failure: the guest token is fine, show the registration screen instead.
- **Who may call what** is the \`x-access\` field of each operation: \`public\` (no token needed; one
  that is sent is used), \`optional\` (a guest token upgrades the guest; a broken token is 401),
  \`token\` (guests too), \`registered\` (full accounts; a guest gets \`403 registration_required\`).

## Errors

Every error answer, 5xx included, is \`{"error": {"code", "message", "details"?}}\`. Program
against \`code\`; \`message\` is for people and may change. A \`422\` adds \`details\`, one
\`{loc, msg, type}\` per failed field, where \`loc\` starts with \`body\`, \`query\`, \`path\` or
\`header\`; the submitted value is never echoed back. Each operation lists the codes it can answer.

| HTTP | code | when |
|---|---|---|
| 400 | \`bad_request\` | an HTTP request the server cannot parse (a bad header line, a negative \`Content-Length\`); the connection is closed |
| 401 | \`auth_required\` | no token, or an expired, malformed or revoked one; a refresh token expired, revoked or reused |
| 401 | \`invalid_credentials\` | wrong email or password, missing or wrong \`current_password\`, a provider refused its token |
| 402 | \`insufficient_credits\` | the balance is below the cost |
| 403 | \`forbidden\` | another's resource, a device owned by a full account, a purchase not allowed |
| 403 | \`registration_required\` | a section closed to guests |
| 404 | \`not_found\` | absent, or not the caller's (never 403 for someone else's object) |
| 405 | \`method_not_allowed\` | a known path with another method (\`Allow\` lists the right ones) |
| 408 | \`request_timeout\` | the request (headers and body) did not arrive within the server's time limit; the connection is closed |
| 409 | \`email_taken\`, \`already_subscribed\`, \`idempotency_key_reused\`, \`request_in_progress\` | see the operations |
| 413 | \`payload_too_large\` | the body, a voice recording or its length is above the limit |
| 415 | \`unsupported_media_type\` | a voice recording in a format that is not accepted |
| 422 | \`validation_error\`, \`characters_required\` | bad input; \`details\` names the fields (at most 3 per field and 20 in all; the message counts the rest) |
| 429 | \`rate_limited\`, \`too_many_streams\` | a rate limit or the cap of open streams; \`Retry-After\` in seconds when the wait is known |
| 431 | \`headers_too_large\` | the request headers are above 16 KB; the connection is closed |
| 500 | \`internal_error\` | unexpected; the message is generic |
| 501 | \`not_implemented\` | a contract path not built yet (after authentication and the guest check) |
| 503 | \`provider_unavailable\` | an identity provider, the AI provider, speech recognition or the payment processor is not configured, not answering or overloaded |

Retrying: when \`Retry-After\` is there, wait that long; otherwise back off exponentially with
jitter, a finite number of times. A POST that spends credits or money is retried only with an
\`Idempotency-Key\`. Treat unknown values of open sets (a generation's \`error_code\`, complaint
reasons) as generic.

## Idempotent retries

\`POST /v1/generations\`, \`POST /v1/studio/generations\`, \`POST /v1/payments\` and
\`POST /v1/subscriptions\` take an optional \`Idempotency-Key\` header: 16..64 characters from
\`A-Z a-z 0-9 _ -\`. The same key with the same body returns the object the first request created,
with the same status code and its current state, and charges once; with another body it is
\`409 idempotency_key_reused\`. Generations and studio generations share one key space, payments and
subscriptions another. A refused request (402, 403, 404, 422, 429, 503) leaves the key free. Keys
never expire. \`409 request_in_progress\` (payments) lasts at most about 1.5 minutes.

## Lists and limits

Paged lists answer \`{items, total, limit, offset}\`: \`limit\` 1..100 (default 20), \`offset\`
0..10000 (default 0); outside those bounds is \`422\`. Rate limits are token buckets: each sign-in
operation per client address; writes (creating generations and studio generations, uploads,
payments, subscriptions and their cancellation, complaints, push devices, submitting, publishing and
deleting user effects) per user; reads under a token (\`/me\`, \`/credits\`, \`/generations\`,
\`/referral\`, \`/payments\`, \`/subscriptions\`, \`/user-effects\`, the studio estimate, streams)
share one budget per user; voice input has its own. Above the limit the
answer is \`429 rate_limited\`.

## Photos and generations

1. \`POST /v1/uploads\` with the photo's \`content_type\` answers a ticket; send a
   \`multipart/form-data\` POST to its \`url\` with every entry of \`fields\` unchanged and the file
   last, in the field \`file\` (at most 15 MB). The store answers \`204\`; a changed field is refused
   with \`403\` and a larger file with \`400\`, in S3's XML error shape. The avatar works the same way
   (\`POST /v1/me/avatar/upload-url\`, then \`PUT /v1/me/avatar\`).
2. \`POST /v1/generations\` with \`effect_id\` and \`characters\`: one list of upload ids per person
   of the effect, in its \`characters\` order (the first photo of a person is the main face, the
   others are angles). The cost is reserved at once and the answer is \`202\` with the generation
   \`pending\`. A saturated provider pool does not refuse: the generation waits in line
   (\`queue_position\`, \`estimated_wait_s\`).
3. Follow it on \`GET /v1/generations/{id}/stream\` (Server-Sent Events) or by push, then read
   \`GET /v1/generations/{id}\` for \`result_url\` and \`preview\`: signed links valid about an hour
   (fetch the detail again for fresh ones; the link's path is a stable cache key). A \`failed\`
   generation carries \`error_code\` and its credits are back (a \`refund\` row in the history).

## Streams (Server-Sent Events)

\`GET /v1/generations/{id}/stream\`, \`GET /v1/payments/{id}/stream\` and
\`GET /v1/user-effects/{id}/stream\` answer \`text/event-stream\`. The first event is a snapshot of the current state (even when it is already
final); later events come on changes; comment lines (\`: ping\`) keep the connection alive. The
server closes the stream at a final status. After a broken connection, reopen it: the snapshot
restores the state. Opening a stream counts against the read budget and a per-user cap of open
streams across kinds (\`429 too_many_streams\`). Each \`data:\` line is one JSON object: each
stream's \`text/event-stream\` answer names its schema by event name in the vendor extension
\`x-sse-events\` (\`{"status": {"$ref": "#/components/schemas/GenerationStreamEvent"}}\`; \`message\` names
the payment stream's events, which have no \`event:\` line), so a generated client has their types.

## Payments

\`GET /v1/payments/products\` lists the credit packs. \`POST /v1/payments\` (registered accounts,
with an \`Idempotency-Key\`; allow at least 15 s) answers \`201\` with \`payment_url\`: open it in a
browser, where the processor hosts the payment page. The payer comes back on
\`/v1/payments/{id}/return\` or \`/fail\`, pages that open the app again; they are not proof of
payment. Then call \`POST /v1/payments/{id}/refresh\` once, follow \`GET /v1/payments/{id}/stream\`,
or poll \`GET /v1/payments/{id}\` every 2 to 3 seconds: \`succeeded\` means the credits are on the
balance. \`failed\` and \`expired\` may still turn \`succeeded\` (the payer may retry on the same
page); \`succeeded\` and \`refunded\` are final.

## Push notifications

Register each installation's token with \`POST /v1/devices\` (\`platform\` \`ios\` or \`android\`,
and the \`device_id\`). A generation reaching \`succeeded\` or \`failed\` sends a push in the user's
language with \`generation_id\` and \`status\` in its data.

## Generated clients

\`/v1/openapi.json\` feeds client generators. For TypeScript (React Native included),
\`npx openapi-typescript <this server>/v1/openapi.json --output schema.d.ts\` writes the types
\`openapi-fetch\` calls the API with, the streams' events included. The service's repository holds
the app developer's guide, \`docs/mobile.md\`: such a client step by step, uploads, streams, push tokens
and coming back from a payment in React Native, and testing from a phone or an emulator.

## Trying it out locally

A development server (\`npm start\`) runs with built-in simulators: the AI provider (the demo effect
\`qa-provider-error\` always fails with \`provider_error\`, \`qa-safety\` with \`safety\`) and the
payment processor, whose payment page lets you pick the outcome (success, insufficient funds,
system error, unknown).
`.trim();
