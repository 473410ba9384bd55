import { seal } from '../../db/accounts/sealed-secret';
import type { Services } from '../../services';
import { openFullAccount } from '../accounts/accounts';
import { optionalDeviceHash } from '../accounts/devices';
import { startSession, type TokenResponse } from '../accounts/sessions';
import type { SessionUser } from '../http/context';
import type { ProviderProfile } from '../../clients/identity/profile';

/**
 * Identity linking at provider sign-in (the contract):
 * - a known identity signs in its account (a guest's token changes nothing then);
 * - an unknown identity whose email the provider vouches for joins the account with that email,
 *   without welcome credits or referral bonus;
 * - otherwise a new full account is made, from the guest when a guest's token came along, with
 *   welcome credits and the referral bonus; its name comes from the provider profile.
 */
export async function signInWithProvider(
  services: Services,
  profile: ProviderProfile,
  request: { caller: SessionUser | null; deviceId?: string; refCode?: string },
): Promise<TokenResponse> {
  const deviceHash = optionalDeviceHash(request.deviceId);
  const sealedRefreshToken = profile.refreshToken ? seal(services.config.tokenSecret, profile.refreshToken) : null;
  return services.db.transaction(async (trx) => {
    // Two first sign-ins of one identity at once would both find it unknown: serialize them.
    await trx.raw('select pg_advisory_xact_lock(hashtextextended(?, 0))', [`identity:${profile.provider}:${profile.subject}`]);
    const identity = await trx('identities').where({ provider: profile.provider, subject: profile.subject }).first('id', 'user_id');
    if (identity) {
      await trx('identities').where({ id: identity.id }).update({
        last_sign_in_at: trx.fn.now(),
        button: profile.button ?? trx.raw('button'),
        sealed_refresh_token: sealedRefreshToken ?? trx.raw('sealed_refresh_token'),
      });
      return startSession(trx, services, { userId: identity.user_id, deviceHash });
    }
    const sameEmail = profile.linkableEmail
      ? await trx('users').whereRaw('lower(email) = lower(?)', [profile.linkableEmail]).first('id')
      : undefined;
    const userId = sameEmail?.id ?? (await openFullAccount(trx, services.config, {
      guestId: request.caller?.isAnonymous ? request.caller.id : null,
      details: { email: profile.linkableEmail, passwordHash: null, name: profile.name },
      deviceHash,
      refCode: request.refCode,
    }));
    await trx('identities').insert({
      user_id: userId,
      provider: profile.provider,
      subject: profile.subject,
      button: profile.button,
      sealed_refresh_token: sealedRefreshToken,
    });
    return startSession(trx, services, { userId, deviceHash });
  });
}
