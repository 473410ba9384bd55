import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { errors } from '../http/errors';
import type { IdempotencyKey } from './idempotency-key';

/**
 * The `idempotency_keys` rows: a key is bound to an object only inside the transaction that
 * creates the object, so a refused request leaves it free; a key lives as long as its row (no
 * expiry). A two-phase creation binds it `in_progress_until` a deadline while it waits on an
 * outside party.
 */
export interface BoundKey {
  objectId: string;
  statusCode: number;
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
 * with another body or on the other endpoint of its pair is `409 idempotency_key_reused`; a key
 * whose first request still waits on an outside party is `409 request_in_progress`.
 */
export async function findBoundKey(db: Knex, userId: string, idempotency: IdempotencyKey, fingerprint: string): Promise<BoundKey | null> {
  const { rows: [row] } = await db.raw<{ rows: KeyRow[] }>(
    `select endpoint, fingerprint, object_id, status_code, in_progress_until from idempotency_keys
     where user_id = :userId and pair = :pair and key = :key`,
    { userId, pair: idempotency.pair, key: idempotency.key },
  );
  if (!row) return null;
  if (row.endpoint !== idempotency.endpoint || row.fingerprint !== fingerprint) throw errors.idempotencyKeyReused();
  if (row.in_progress_until && row.in_progress_until > new Date()) throw errors.requestInProgress();
  return { objectId: row.object_id, statusCode: row.status_code };
}

/**
 * Binds the key to the object being created, inside the creating transaction (in progress for
 * `inProgressForSeconds`, when given). False when a concurrent request with the same key won.
 */
export async function bindKey(
  trx: Knex.Transaction,
  userId: string,
  idempotency: IdempotencyKey,
  fingerprint: string,
  bound: BoundKey & { inProgressForSeconds?: number },
): Promise<boolean> {
  const { rows } = await trx.raw<{ rows: unknown[] }>(
    `insert into idempotency_keys (user_id, pair, key, endpoint, fingerprint, object_id, status_code, in_progress_until)
     values (:userId, :pair, :key, :endpoint, :fingerprint, :objectId, :statusCode,
       case when :inProgressForSeconds::integer is null then null else now() + make_interval(secs => :inProgressForSeconds::integer) end)
     on conflict (user_id, pair, key) do nothing
     returning object_id`,
    { userId, ...idempotency, fingerprint, objectId: bound.objectId, statusCode: bound.statusCode, inProgressForSeconds: bound.inProgressForSeconds ?? null },
  );
  return rows.length === 1;
}

/** The first request finished waiting on the outside party: repeats now get its object. */
export async function finishKey(db: Knex, userId: string, idempotency: IdempotencyKey): Promise<void> {
  await db.raw('update idempotency_keys set in_progress_until = null where user_id = :userId and pair = :pair and key = :key', { userId, ...idempotency });
}

/**
 * A retry after the first request broke on the server side (its in-progress mark ran out while its
 * object was left unfinished): marks the key in progress again for this retry. False when another
 * retry reclaimed it first.
 */
export async function reclaimKey(db: Knex, userId: string, idempotency: IdempotencyKey, inProgressForSeconds: number): Promise<boolean> {
  const reclaimed = await db.raw<{ rowCount: number }>(
    `update idempotency_keys set in_progress_until = now() + make_interval(secs => :inProgressForSeconds)
     where user_id = :userId and pair = :pair and key = :key and (in_progress_until is null or in_progress_until <= now())`,
    { userId, ...idempotency, inProgressForSeconds },
  );
  return reclaimed.rowCount === 1;
}

/** The object was closed before anyone could use it: the key is free again. */
export async function releaseKey(db: Knex, userId: string, idempotency: IdempotencyKey): Promise<void> {
  await db.raw('delete from idempotency_keys where user_id = :userId and pair = :pair and key = :key', { userId, ...idempotency });
}

/**
 * Serialises concurrent requests with the same key (same user, same pair) until the transaction
 * ends, so the second one sees the first one's binding instead of racing it to a refusal (a 402
 * for the credits the first just reserved). The primary key of `idempotency_keys` stays the last word.
 */
export async function lockKey(trx: Knex.Transaction, userId: string, idempotency: IdempotencyKey): Promise<void> {
  await trx.raw('select pg_advisory_xact_lock(hashtextextended(?, 0))', [`idempotency:${userId}:${idempotency.pair}:${idempotency.key}`]);
}
