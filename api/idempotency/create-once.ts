import type { Knex } from 'knex';
import { errors, type ApiError } from '../http/errors';
import type { IdempotencyKey } from './idempotency-key';
import { bindKey, findBoundKey, finishKey, lockKey, reclaimKey, releaseKey, requestFingerprint, type BoundKey } from './keys';

/** What a repeat finds behind a bound key. */
export type BoundObject<Answer> =
  /** Answer with it (its current state). */
  | { state: 'done'; answer: Answer }
  /** Two-phase: the first request broke before its outside call was finished: finish it now. */
  | { state: 'unfinished' }
  /** Two-phase: closed before anyone could use it: the key is free again, and this request creates anew. */
  | { state: 'closed' };

/**
 * A creation that waits on an outside party (the payment processor): the creating transaction binds
 * the key as in progress, the call is made outside it, then the key is finished; a refused call
 * closes the object and frees the key in one transaction.
 */
export interface TwoPhase<Answer> {
  /** How long a repeat answers `409 request_in_progress` while the call runs; after that a repeat finishes it. */
  inProgressForSeconds: number;
  call(objectId: string): Promise<{ answer: Answer } | { refusal: ApiError }>;
  close(trx: Knex.Transaction, objectId: string): Promise<void>;
}

export interface CreateOnce<Plan, Answer> {
  db: Knex;
  userId: string;
  /** The request's key, as the router read it; null without one. */
  idempotency: IdempotencyKey | null;
  /** The request as the endpoint understood it: the same key with another body is `409 idempotency_key_reused`. */
  body: unknown;
  /** The status of the answer, for the first request and its repeats. */
  statusCode: number;
  /** The checks that need no transaction, in the contract's order; a refusal thrown here leaves the key free. */
  prepare(): Promise<Plan>;
  /** Inside the one creating transaction, which also binds the key: answers the new object's id; a refusal rolls back. */
  create(trx: Knex.Transaction, plan: Plan): Promise<string>;
  /** The object a key is bound to, as a repeat sees it. */
  find(objectId: string): Promise<BoundObject<Answer>>;
  /** One-phase: the answer to the request that created the object, when it needs no read (else `find`'s). */
  answerCreated?(objectId: string): Answer;
  twoPhase?: TwoPhase<Answer>;
}

/**
 * Creates an object at most once per key (the contract: idempotent retries), or answers with the
 * object the key is bound to. In order: a repeat is answered before anything else, even if the
 * request would now be refused; `prepare` runs the checks outside any transaction; `create` runs in
 * one transaction that also binds the key. Concurrent duplicates are serialised by a per-key
 * advisory lock (the second one finds the first one's binding), and the key's unique row is the last
 * word. A refusal leaves the key free.
 */
export async function createOnce<Plan, Answer>(spec: CreateOnce<Plan, Answer>): Promise<{ statusCode: number; body: Answer }> {
  const { db, userId, idempotency } = spec;
  const fingerprint = idempotency ? requestFingerprint(idempotency.endpoint, spec.body) : '';

  const finish = async (objectId: string): Promise<{ statusCode: number; body: Answer }> => {
    if (!spec.twoPhase) {
      if (spec.answerCreated) return { statusCode: spec.statusCode, body: spec.answerCreated(objectId) };
      const found = await spec.find(objectId);
      if (found.state !== 'done') throw new Error(`object ${objectId} of a one-phase creation is ${found.state}`);
      return { statusCode: spec.statusCode, body: found.answer };
    }
    const outcome = await spec.twoPhase.call(objectId);
    if ('refusal' in outcome) {
      await db.transaction(async (trx) => {
        await spec.twoPhase!.close(trx, objectId);
        if (idempotency) await releaseKey(trx, userId, idempotency);
      });
      throw outcome.refusal;
    }
    if (idempotency) await finishKey(db, userId, idempotency);
    return { statusCode: spec.statusCode, body: outcome.answer };
  };

  /** The answer to a repeat, or null when the key was freed and this request creates anew. */
  const repeat = async (key: IdempotencyKey, bound: BoundKey): Promise<{ statusCode: number; body: Answer } | null> => {
    const found = await spec.find(bound.objectId);
    switch (found.state) {
      case 'done':
        return { statusCode: bound.statusCode, body: found.answer };
      case 'unfinished':
        if (!(await reclaimKey(db, userId, key, spec.twoPhase!.inProgressForSeconds))) throw errors.requestInProgress();
        return finish(bound.objectId);
      case 'closed':
        await releaseKey(db, userId, key);
        return null;
    }
  };

  if (idempotency) {
    const bound = await findBoundKey(db, userId, idempotency, fingerprint);
    const repeated = bound && (await repeat(idempotency, bound));
    if (repeated) return repeated;
  }
  const plan = await spec.prepare();
  const lostRace = Symbol('lost race');
  let created: string | BoundKey;
  try {
    created = await db.transaction(async (trx) => {
      if (idempotency) {
        await lockKey(trx, userId, idempotency);
        const twin = await findBoundKey(trx, userId, idempotency, fingerprint);
        if (twin) return twin;
      }
      const objectId = await spec.create(trx, plan);
      const bound = { objectId, statusCode: spec.statusCode, inProgressForSeconds: spec.twoPhase?.inProgressForSeconds };
      if (idempotency && !(await bindKey(trx, userId, idempotency, fingerprint, bound))) throw lostRace;
      return objectId;
    });
  } catch (error) {
    if (error !== lostRace || !idempotency) throw error;
    // Throws `409 request_in_progress` while the winner still waits on the outside party.
    const winner = await findBoundKey(db, userId, idempotency, fingerprint);
    if (!winner) throw errors.requestInProgress();
    created = winner;
  }
  if (typeof created === 'string') return finish(created);
  // A twin with the same key was created first.
  const twin = await repeat(idempotency!, created);
  if (!twin) throw errors.requestInProgress();
  return twin;
}
