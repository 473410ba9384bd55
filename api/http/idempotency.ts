import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import type { ApiContext } from './context';
import { errors, invalidField } from './errors';

/**
 * `Idempotency-Key` (contract part A, "Idempotent retry"), one mechanism for the four endpoints.
 * A key is bound to an object only inside the transaction that creates the object, so a rejected
 * request leaves it free; a key lives as long as its row (no expiry); keys are per user.
 */
export type KeyPair = 'generation' | 'payment';

export interface IdempotencyScope {
  pair: KeyPair;
  /** The endpoint inside the pair, e.g. `POST /v1/generations`. */
  endpoint: string;
}

export interface BoundKey {
  objectId: string;
  statusCode: number;
}

const keyFormat = /^[A-Za-z0-9_-]{16,64}$/;

/** The key of the request, or null without the header; a malformed key is a 422. */
export function idempotencyKeyOf(ctx: ApiContext): string | null {
  const key = ctx.get('Idempotency-Key');
  if (!key) return null;
  if (!keyFormat.test(key)) throw invalidField(['header', 'Idempotency-Key'], 'must be 16..64 characters from A-Z a-z 0-9 _ -', 'pattern');
  return key;
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.keys(value).sort().map((name) => [name, canonical((value as Record<string, unknown>)[name])]));
  }
  return value;
}

/** What "the same request" means: the same endpoint and the same JSON body, whatever the key order. */
export function requestFingerprint(endpoint: string, body: unknown): string {
  return createHash('sha256').update(endpoint).update('\n').update(JSON.stringify(canonical(body ?? {}))).digest('hex');
}

interface KeyRow {
  endpoint: string;
  fingerprint: string;
  object_id: string;
  status_code: number;
  in_progress_until: Date | null;
}

/**
 * The object a repeat of this request must answer with, or null when the key is free. A key seen
 * with another body or on the neighbouring endpoint is `409 idempotency_key_reused`; a key whose
 * first request still waits on an outside party is `409 request_in_progress`.
 */
export async function findBoundKey(db: Knex, userId: string, scope: IdempotencyScope, key: string, fingerprint: string): Promise<BoundKey | null> {
  const row: KeyRow | undefined = await db('idempotency_keys')
    .where({ user_id: userId, pair: scope.pair, key })
    .first('endpoint', 'fingerprint', 'object_id', 'status_code', 'in_progress_until');
  if (!row) return null;
  if (row.endpoint !== scope.endpoint || row.fingerprint !== fingerprint) throw errors.idempotencyKeyReused();
  if (row.in_progress_until && row.in_progress_until > new Date()) throw errors.requestInProgress();
  return { objectId: row.object_id, statusCode: row.status_code };
}

/**
 * Binds the key to the object being created, inside the creating transaction. Returns false when a
 * concurrent request with the same key won: the caller rolls back and answers with `findBoundKey`.
 */
export async function bindKey(
  trx: Knex.Transaction,
  userId: string,
  scope: IdempotencyScope,
  key: string,
  fingerprint: string,
  bound: BoundKey & { inProgressForSeconds?: number },
): Promise<boolean> {
  const inserted = await trx('idempotency_keys')
    .insert({
      user_id: userId,
      pair: scope.pair,
      key,
      endpoint: scope.endpoint,
      fingerprint,
      object_id: bound.objectId,
      status_code: bound.statusCode,
      in_progress_until: bound.inProgressForSeconds ? trx.raw(`now() + make_interval(secs => ?)`, [bound.inProgressForSeconds]) : null,
    })
    .onConflict(['user_id', 'pair', 'key'])
    .ignore()
    .returning('object_id');
  return inserted.length === 1;
}

/** The first request finished waiting on the outside party: repeats now get its object. */
export async function finishKey(db: Knex, userId: string, pair: KeyPair, key: string): Promise<void> {
  await db('idempotency_keys').where({ user_id: userId, pair, key }).update({ in_progress_until: null });
}

/**
 * A retry after the first request broke on the server side (its in-progress mark ran out while its
 * object was left unfinished): marks the key in progress again for this retry. False when another
 * retry reclaimed it first, which then answers `409 request_in_progress`.
 */
export async function reclaimKey(db: Knex, userId: string, pair: KeyPair, key: string, inProgressForSeconds: number): Promise<boolean> {
  const updated = await db('idempotency_keys')
    .where({ user_id: userId, pair, key })
    .andWhere((query) => query.whereNull('in_progress_until').orWhere('in_progress_until', '<=', db.fn.now()))
    .update({ in_progress_until: db.raw('now() + make_interval(secs => ?)', [inProgressForSeconds]) });
  return updated === 1;
}

/** The creation failed after the key was bound (the processor refused or was silent): the key is free again. */
export async function releaseKey(db: Knex, userId: string, pair: KeyPair, key: string): Promise<void> {
  await db('idempotency_keys').where({ user_id: userId, pair, key }).delete();
}

/**
 * Serialises concurrent requests with the same key (same user, same pair) until the transaction
 * ends, so the second one sees the first one's binding instead of racing it to a refusal (a 402
 * for the credits the first just reserved). The primary key of `idempotency_keys` stays the last word.
 */
export async function lockKey(trx: Knex.Transaction, userId: string, pair: KeyPair, key: string): Promise<void> {
  await trx.raw('select pg_advisory_xact_lock(hashtextextended(?, 0))', [`idempotency:${userId}:${pair}:${key}`]);
}

/**
 * Creates an object at most once per key, or answers with the object the key is bound to (with
 * its current state, via `existing`). In order: a repeat is answered before anything else, even if
 * the request would now be refused; `prepare` runs the request's checks outside any transaction;
 * `create` reserves and inserts in one transaction that also binds the key. A refusal thrown by
 * `prepare` or `create` leaves the key free.
 */
export async function createOnce<T, Prepared = void>(options: {
  db: Knex;
  userId: string;
  scope: IdempotencyScope;
  key: string | null;
  body: unknown;
  prepare?: () => Promise<Prepared>;
  create: (trx: Knex.Transaction, prepared: Prepared) => Promise<BoundKey>;
  existing: (bound: BoundKey) => Promise<T>;
}): Promise<{ statusCode: number; body: T }> {
  const { db, userId, scope, key } = options;
  const fingerprint = requestFingerprint(scope.endpoint, options.body);
  const answer = async (bound: BoundKey) => ({ statusCode: bound.statusCode, body: await options.existing(bound) });
  if (key) {
    const bound = await findBoundKey(db, userId, scope, key, fingerprint);
    if (bound) return answer(bound);
  }
  const prepared = (options.prepare ? await options.prepare() : undefined) as Prepared;
  const lostRace = Symbol('lost race');
  try {
    return await answer(await db.transaction(async (trx) => {
      if (key) {
        await lockKey(trx, userId, scope.pair, key);
        const twin = await findBoundKey(trx, userId, scope, key, fingerprint);
        if (twin) return twin;
      }
      const created = await options.create(trx, prepared);
      if (key && !(await bindKey(trx, userId, scope, key, fingerprint, created))) throw lostRace;
      return created;
    }));
  } catch (error) {
    if (error !== lostRace || !key) throw error;
    const winner = await findBoundKey(db, userId, scope, key, fingerprint);
    if (!winner) throw error;
    return answer(winner);
  }
}
