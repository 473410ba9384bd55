import type { Services } from '../../services';
import { errors } from '../http/errors';
import { recordReferral } from '../referrals/referrals';
import { createGuest } from './accounts';
import { deviceHasFullAccount, deviceHash } from './devices';
import { startSession, type TokenResponse } from './sessions';

/**
 * `POST /v1/auth/anonymous` (the contract: account states): the device's guest, created on first
 * sight with the start credits once per device lifetime; the same guest with a new pair afterwards;
 * `403 forbidden` when a full account has signed in from the device.
 */
export async function signInAsGuest(services: Services, request: { deviceId: string; refCode?: string }): Promise<TokenResponse> {
  const hash = deviceHash(request.deviceId);
  return services.db.transaction(async (trx) => {
    await trx.raw('insert into devices (device_hash) values (?) on conflict (device_hash) do nothing', [hash]);
    // The device row lock makes two first requests from one device create one guest.
    const device = await trx('devices').where({ device_hash: hash }).forUpdate().first('guest_user_id', 'start_credits_granted_at');
    if (await deviceHasFullAccount(trx, hash)) throw errors.forbidden('This device belongs to a registered account: sign in instead.');
    let guestId: string | null = device.guest_user_id;
    if (guestId) {
      await recordReferral(trx, guestId, request.refCode);
    } else {
      guestId = await createGuest(trx, services.config, { deviceHash: hash, grantStartCredits: !device.start_credits_granted_at, refCode: request.refCode });
      await trx('devices')
        .where({ device_hash: hash })
        .update({ guest_user_id: guestId, start_credits_granted_at: trx.raw('coalesce(start_credits_granted_at, now())') });
    }
    return startSession(trx, services, { userId: guestId, deviceHash: hash });
  });
}
