import type { Knex } from 'knex';
import type { Config } from '../../config';
import { credit } from '../../db/credits/ledger';
import { errors } from '../http/errors';
import { completeReferral, recordReferral } from '../referrals/referrals';
import { recordUserDevice } from './devices';

/** What a new full account starts with; a guest's own values stay where these are null. */
export interface FullAccountDetails {
  email: string | null;
  passwordHash: string | null;
  name: string | null;
}

function isEmailConflict(error: unknown): boolean {
  const { code, constraint } = error as { code?: string; constraint?: string };
  return code === '23505' && constraint === 'users_email_unique';
}

/**
 * Creates a full account, or turns the guest `guestId` into one under the same id (balance, uploads
 * and generations stay). Either way: welcome credits, then the referral (`refCode` applies only if
 * none is recorded yet) with both bonuses, unless the two accounts share a device. The device is
 * recorded first, so this very sign-in counts for the same-device rule.
 */
export async function openFullAccount(
  trx: Knex.Transaction,
  config: Config,
  options: { guestId: string | null; details: FullAccountDetails; deviceHash: string | null; refCode?: string },
): Promise<string> {
  const { details } = options;
  const userId = await insertOrUpgrade(trx, options.guestId, details).catch((error) => {
    if (isEmailConflict(error)) throw errors.emailTaken();
    throw error;
  });
  if (config.welcomeCredits > 0) await credit(trx, { userId, kind: 'welcome', amount: config.welcomeCredits, reference: 'welcome' });
  if (options.deviceHash) await recordUserDevice(trx, userId, options.deviceHash);
  await recordReferral(trx, userId, options.refCode);
  await completeReferral(trx, userId, config.referralBonus);
  return userId;
}

async function insertOrUpgrade(trx: Knex.Transaction, guestId: string | null, details: FullAccountDetails): Promise<string> {
  const values = { is_anonymous: false, email: details.email, password_hash: details.passwordHash };
  if (guestId) {
    // Guarded by is_anonymous: of two concurrent upgrades of one guest only one upgrades it.
    const [upgraded] = await trx('users')
      .where({ id: guestId, is_anonymous: true })
      .update({ ...values, name: trx.raw('coalesce(?, name)', [details.name]) })
      .returning('id');
    if (upgraded) return upgraded.id;
  }
  const [created] = await trx('users').insert({ ...values, name: details.name }).returning('id');
  return created.id;
}

/** A new guest with the start credits when its device has never had them. */
export async function createGuest(
  trx: Knex.Transaction,
  config: Config,
  options: { deviceHash: string; grantStartCredits: boolean; refCode?: string },
): Promise<string> {
  const [guest] = await trx('users').insert({ is_anonymous: true }).returning('id');
  if (options.grantStartCredits && config.guestStartCredits > 0) {
    await credit(trx, { userId: guest.id, kind: 'guest_start', amount: config.guestStartCredits, reference: 'guest_start' });
  }
  await recordUserDevice(trx, guest.id, options.deviceHash);
  await recordReferral(trx, guest.id, options.refCode);
  return guest.id;
}
