import { revokeAllRefreshTokens } from '../../db/accounts/refresh-tokens';
import type { Services } from '../../services';
import type { SessionUser } from '../http/context';
import { errors } from '../http/errors';
import { checkLoginAllowed, clearLoginFailures, recordLoginFailure } from '../http/rate-limit';
import { openFullAccount } from './accounts';
import { isKnownDevice, optionalDeviceHash } from './devices';
import { hashPassword, verifyPassword } from './passwords';
import { startSession, type TokenResponse } from './sessions';

/** Accounts with email and password: register (also a guest's upgrade), login, change-password. */

async function accountByEmail(services: Services, email: string) {
  return services.db('users').whereRaw('lower(email) = lower(?)', [email]).first('id', 'password_hash');
}

/**
 * With a guest's token the guest becomes the full account under its own id; with no token (or a
 * full account's) a new account is made. An occupied email is `409 email_taken` and changes nothing.
 */
export async function register(
  services: Services,
  request: { email: string; password: string; name?: string; deviceId?: string; refCode?: string; caller: SessionUser | null },
): Promise<TokenResponse> {
  // The common case answered before paying for a hash; under a race the unique index decides.
  if (await accountByEmail(services, request.email)) throw errors.emailTaken();
  const passwordHash = await hashPassword(request.password);
  const deviceHash = optionalDeviceHash(request.deviceId);
  return services.db.transaction(async (trx) => {
    const userId = await openFullAccount(trx, services.config, {
      guestId: request.caller?.isAnonymous ? request.caller.id : null,
      details: { email: request.email, passwordHash, name: request.name ?? null },
      deviceHash,
      refCode: request.refCode,
    });
    return startSession(trx, services, { userId, deviceHash });
  });
}

/**
 * Checks the login lock and the distributed-guessing guard before the password (see rate-limit.ts),
 * and counts a wrong password for both. An unknown email costs the same time as a wrong password.
 */
export async function logIn(
  services: Services,
  request: { email: string; password: string; deviceId?: string; source: string },
): Promise<TokenResponse> {
  const { db, config } = services;
  const account = await accountByEmail(services, request.email);
  const deviceHash = optionalDeviceHash(request.deviceId);
  const attempt = { email: request.email, source: request.source };
  await checkLoginAllowed(db, {
    ...attempt,
    isTrustedDevice: async () => Boolean(account && deviceHash && (await isKnownDevice(db, account.id, deviceHash))),
  });
  const matched = await verifyPassword(account?.password_hash ?? null, request.password);
  if (!account || !matched) {
    await recordLoginFailure(db, config.rateLimits, attempt);
    throw errors.invalidCredentials();
  }
  await clearLoginFailures(db, attempt);
  return db.transaction((trx) => startSession(trx, services, { userId: account.id, deviceHash }));
}

/**
 * The five rules of `POST /v1/auth/change-password` (a guest never gets here: the route is
 * `registered`). Success revokes every refresh token and opens a session for the current device.
 */
export async function changePassword(
  services: Services,
  request: { userId: string; currentPassword?: string; newPassword: string; deviceId?: string },
): Promise<TokenResponse> {
  const { db } = services;
  const user = await db('users').where({ id: request.userId }).first('email', 'password_hash');
  if (!user.email) throw errors.forbidden('An account without email has no password.');
  // An account made by a provider has an email but no password yet: it may set one directly.
  if (user.password_hash !== null) {
    if (request.currentPassword === undefined || !(await verifyPassword(user.password_hash, request.currentPassword))) {
      throw errors.invalidCredentials();
    }
  }
  const passwordHash = await hashPassword(request.newPassword);
  const deviceHash = optionalDeviceHash(request.deviceId);
  return db.transaction(async (trx) => {
    // Guarded by the hash that was checked: of two concurrent changes only the first applies.
    const changed = await trx('users')
      .where({ id: request.userId })
      .andWhere((query) => (user.password_hash === null ? query.whereNull('password_hash') : query.where('password_hash', user.password_hash)))
      .update({ password_hash: passwordHash });
    if (!changed) throw errors.invalidCredentials();
    await revokeAllRefreshTokens(trx, request.userId);
    return startSession(trx, services, { userId: request.userId, deviceHash });
  });
}
