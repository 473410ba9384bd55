import type { Knex } from 'knex';
import { credit } from '../../db/credits/ledger';
import { shareADevice } from '../accounts/devices';

/**
 * The referral program (the contract: referrals). A link is recorded when a code arrives
 * with a new account or a guest; both bonuses are paid once, when the invited user becomes a full
 * account, unless both ever signed in from one device.
 */

/** Codes are shown upper-case; a code typed in lower case still counts. */
function normalizeCode(code: string): string {
  return code.trim().toUpperCase();
}

/**
 * Records who invited `invitedId`. An empty, unknown or own code is ignored without error, and a
 * recorded inviter is never replaced (the unique `invited_id` makes a second link a no-op).
 */
export async function recordReferral(trx: Knex.Transaction, invitedId: string, code: string | undefined): Promise<void> {
  if (!code || !normalizeCode(code)) return;
  const inviter = await trx('users').where({ referral_code: normalizeCode(code) }).first('id');
  if (!inviter || inviter.id === invitedId) return;
  await trx.raw('insert into referrals (inviter_id, invited_id) values (?, ?) on conflict (invited_id) do nothing', [inviter.id, invitedId]);
}

/**
 * Called when `invitedId` becomes a full account: the link starts counting as "invited", and both
 * bonuses are paid unless the two accounts share a device. The first update locks the link until
 * commit, so a concurrent call waits and then sees `paid_at`; the ledger references are unique on
 * top, so a repeated call pays nothing twice.
 */
export async function completeReferral(trx: Knex.Transaction, invitedId: string, bonus: number): Promise<void> {
  const [link] = await trx('referrals')
    .where({ invited_id: invitedId })
    .update({ registered_at: trx.raw('coalesce(registered_at, now())') })
    .returning(['id', 'inviter_id', 'paid_at']);
  if (!link || link.paid_at || bonus <= 0) return;
  if (await shareADevice(trx, invitedId, link.inviter_id)) return;
  await trx('referrals').where({ id: link.id }).update({ paid_at: trx.fn.now() });
  const reference = `referral:${invitedId}`;
  await credit(trx, { userId: invitedId, kind: 'referral_bonus', amount: bonus, reference });
  await credit(trx, { userId: link.inviter_id, kind: 'referral_earned', amount: bonus, reference });
}

export interface ReferralStats {
  code: string;
  link: string;
  invited: number;
  credited: number;
  earned: number;
}

function referralLink(linkBase: string, code: string): string {
  return `${linkBase}/r/${encodeURIComponent(code)}`;
}

export async function referralStats(db: Knex, linkBase: string, userId: string): Promise<ReferralStats> {
  const [user, links, earnings] = await Promise.all([
    db('users').where({ id: userId }).first('referral_code'),
    db('referrals')
      .where({ inviter_id: userId })
      .whereNotNull('registered_at')
      .first(db.raw('count(*)::integer as invited'), db.raw('count(paid_at)::integer as credited')),
    db('credit_transactions').where({ user_id: userId, kind: 'referral_earned' }).first(db.raw('coalesce(sum(amount), 0)::integer as earned')),
  ]);
  return {
    code: user.referral_code,
    link: referralLink(linkBase, user.referral_code),
    invited: links.invited,
    credited: links.credited,
    earned: earnings.earned,
  };
}
