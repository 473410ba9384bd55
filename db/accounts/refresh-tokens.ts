import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';

/**
 * Refresh tokens: 256 random bits given to the client once and stored only as their SHA-256.
 * Each sign-in starts a family; every use supersedes the token and issues the next one of the family.
 * Every state change is one guarded statement, so two requests with one token cannot both win.
 */
export function hashRefreshToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export interface IssuedRefreshToken {
  token: string;
  familyId: string;
}

export async function issueRefreshToken(
  db: Knex,
  options: { userId: string; deviceHash: string | null; ttlSeconds: number; familyId?: string },
): Promise<IssuedRefreshToken> {
  const token = randomBytes(32).toString('base64url');
  const familyId = options.familyId ?? randomUUID();
  await db('refresh_tokens').insert({
    user_id: options.userId,
    token_hash: hashRefreshToken(token),
    family_id: familyId,
    device_hash: options.deviceHash,
    expires_at: db.raw("now() + ? * interval '1 second'", [options.ttlSeconds]),
  });
  return { token, familyId };
}

export type Rotation =
  | { outcome: 'rotated'; userId: string; familyId: string; deviceHash: string | null }
  /** A superseded token came back: someone holds a copy. Every token of the user is now revoked. */
  | { outcome: 'reused' }
  | { outcome: 'invalid' };

/**
 * Supersedes an active, unexpired token. A detected reuse revokes every token of the user: the
 * caller must commit that even though it answers 401.
 *
 * Locks in one order, the user's row first, then token rows (as change-password does): parallel
 * refreshes of one token otherwise deadlock, the losers revoking the family by user_id while
 * another still waits on the token row, and answer 500 instead of 401.
 */
export async function rotateRefreshToken(trx: Knex.Transaction, token: string, deviceHash: string | null): Promise<Rotation> {
  const tokenHash = hashRefreshToken(token);
  const { rows: [owner] } = await trx.raw<{ rows: { id: string }[] }>(
    'select users.id from refresh_tokens join users on users.id = refresh_tokens.user_id where refresh_tokens.token_hash = ? for no key update of users',
    [tokenHash],
  );
  if (!owner) return { outcome: 'invalid' };
  const guarded = trx('refresh_tokens').where({ token_hash: tokenHash, state: 'active' }).andWhere('expires_at', '>', trx.fn.now());
  // A token bound to a device is refused when another device presents it; without device_id it passes.
  if (deviceHash) guarded.andWhere((query) => query.whereNull('device_hash').orWhere('device_hash', deviceHash));
  const [rotated] = await guarded
    .update({ state: 'superseded' })
    .returning(['user_id', 'family_id', 'device_hash']);
  if (rotated) return { outcome: 'rotated', userId: rotated.user_id, familyId: rotated.family_id, deviceHash: rotated.device_hash };
  const known = await trx('refresh_tokens').where({ token_hash: tokenHash }).first('state');
  if (known?.state !== 'superseded') return { outcome: 'invalid' };
  await revokeAllRefreshTokens(trx, owner.id);
  return { outcome: 'reused' };
}

/** Logout: revokes this one token of this user; an unknown or foreign token changes nothing. */
export async function revokeRefreshToken(db: Knex, userId: string, token: string): Promise<void> {
  await db('refresh_tokens').where({ token_hash: hashRefreshToken(token), user_id: userId, state: 'active' }).update({ state: 'revoked' });
}

export async function revokeAllRefreshTokens(db: Knex, userId: string): Promise<void> {
  await db('refresh_tokens').where({ user_id: userId }).whereNot({ state: 'revoked' }).update({ state: 'revoked' });
}

/** Expired rows are useless (an expired token answers 401 whether its row exists or not). */
export async function deleteExpiredRefreshTokens(db: Knex): Promise<number> {
  return db('refresh_tokens').where('expires_at', '<', db.fn.now()).delete();
}
