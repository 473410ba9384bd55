import { randomUUID } from 'node:crypto';
import { createGeneration } from '../../../api/generations/create';
import { failGeneration } from '../../../db/generations/fail-generation';
import { seedPaymentShowcase } from '../../../db/payments/seed-showcase';
import { insertProcessing } from '../../../db/user-effects/insert-processing';
import { publishUserEffect } from '../../../db/user-effects/publish-user-effect';
import { recordVerdict } from '../../../db/user-effects/record-verdict';
import { settleEarning } from '../../../db/user-effects/settle-earning';
import { syncProviderAccounts } from '../../../pool/accounts';
import { leaseModerationSlot } from '../../../db/pool/lease-moderation-slot';
import { insertEffect, photo, storedUpload } from '../../generation-fixtures';
import { services } from '../../harness';
import { earningOf, userEffectIn } from '../../user-effect-fixtures';
import { makeUser } from '../../users';
import { jobsOf } from '../../jobs';

/** The operator credentials of the console tests. */
export const operator = { user: 'ops-test', password: 'ops-test-password-0123' };
export const opsConfig = { OPS_USER: operator.user, OPS_PASSWORD: operator.password };

export function basic(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

export const operatorHeaders = { authorization: basic(operator.user, operator.password) };

const minutesAgo = (minutes: number) => new Date(Date.now() - minutes * 60_000);

/** A generation row as the pipeline leaves it, with the times and account given. */
async function finishedGeneration(fields: { userId: string; status: 'succeeded' | 'failed'; errorCode?: string; accountId: number | null; startedAt: Date; finishedAt: Date; createdAt?: Date }): Promise<string> {
  const id = randomUUID();
  await services().db('generations').insert({
    id,
    user_id: fields.userId,
    effect_id: randomUUID(),
    status: fields.status,
    cost: 10,
    output_type: 'image',
    model: 'image',
    inputs: JSON.stringify([]),
    error_code: fields.status === 'failed' ? fields.errorCode ?? 'provider_error' : null,
    provider_account_id: fields.accountId,
    created_at: fields.createdAt ?? fields.startedAt,
    started_at: fields.startedAt,
    finished_at: fields.finishedAt,
  });
  return id;
}

/** A failed generation made the real way (created with its reserve, then failed with its refund): replayable. */
export async function failedGeneration(effectId: string, errorCode: string, balance = 50): Promise<{ id: string; userId: string }> {
  const user = await makeUser({ guest: true, balance });
  const upload = await storedUpload(user.id, await photo());
  const { body } = await createGeneration(services(), user.id, { effect_id: effectId, characters: [[upload]] }, null);
  await services().db.transaction((trx) => failGeneration(trx, services().boss, { generationId: body.id, from: 'pending', errorCode }));
  return { id: body.id, userId: user.id };
}

export interface ConsoleData {
  accounts: { busy: number; cooling: number };
  failed: { providerError: { id: string; userId: string }[]; safety: { id: string; userId: string } };
  payments: { noOrder: string; pastExpiry: string; checkOverdue: string; waiting: string; recent: string };
}

/**
 * What an operator's console shows, made in the real tables: two provider accounts (one with 3 of
 * 4 slots leased, one with 1 of 2 leased and cooling down), generations each account finished in
 * the last hour (latencies 10, 20, 30 s; failures by code), replayable failed generations
 * (`provider_error` twice, `safety` once), and open payments of every kind.
 */
export async function seedConsoleData(): Promise<ConsoleData> {
  const { db } = services();
  await syncProviderAccounts(db, [{ kind: 'simulator', apiKey: 'busy-account-key-0001', slots: 4 }, { kind: 'simulator', apiKey: 'cool-account-key-0002', slots: 2 }]);
  const accounts: { id: number; label: string }[] = await db('provider_accounts').orderBy('id').select('id', 'label');
  const [busy, cooling] = accounts;
  const owner = await makeUser();
  const leased: string[] = [];
  for (let index = 0; index < 4; index += 1) {
    leased.push(await finishedGeneration({ userId: owner.id, status: 'succeeded', accountId: busy.id, startedAt: minutesAgo(30), finishedAt: new Date(minutesAgo(30).getTime() + (index + 1) * 10_000) }));
  }
  // Three leases of the busy account and one of the cooling one (the rows they point to exist).
  await db.raw(`update provider_slots set generation_id = :generationId, lease_expires_at = now() + interval '1 minute' where account_id = :accountId and slot_no < 3`, { generationId: leased[0], accountId: busy.id });
  await db.raw(`update provider_slots set generation_id = :generationId, lease_expires_at = now() + interval '1 minute' where account_id = :accountId and slot_no = 0`, { generationId: leased[1], accountId: cooling.id });
  await db('provider_accounts').where({ id: cooling.id }).update({ cooldown_until: db.raw("now() + interval '90 seconds'") });
  // The fourth finished one is older than an hour: outside the pool's window.
  await db('generations').where({ id: leased[3] }).update({ finished_at: minutesAgo(90), started_at: minutesAgo(91), created_at: minutesAgo(91) });
  await finishedGeneration({ userId: owner.id, status: 'failed', errorCode: 'provider_error', accountId: cooling.id, startedAt: minutesAgo(20), finishedAt: minutesAgo(19) });
  await finishedGeneration({ userId: owner.id, status: 'failed', errorCode: 'provider_error', accountId: cooling.id, startedAt: minutesAgo(10), finishedAt: minutesAgo(9) });
  await finishedGeneration({ userId: owner.id, status: 'failed', errorCode: 'lost_account', accountId: cooling.id, startedAt: minutesAgo(5), finishedAt: minutesAgo(4) });

  const effectId = await insertEffect('winter-portrait');
  const providerError = [await failedGeneration(effectId, 'provider_error'), await failedGeneration(effectId, 'provider_error')];
  const safety = await failedGeneration(effectId, 'safety');

  await seedPaymentShowcase(db);
  const product = await db('payment_products').orderBy('position').first('id', 'price_minor', 'currency', 'credits');
  const payment = async (fields: { createdMinutesAgo: number; expiresInMinutes: number; orderId: string | null; nextCheckMinutes: number | null }) => {
    const [row] = await db('payments').insert({
      user_id: owner.id,
      product_id: product.id,
      status: 'created',
      amount_minor: product.price_minor,
      currency: product.currency,
      credits: product.credits,
      method: 'card',
      processor_order_id: fields.orderId,
      created_at: minutesAgo(fields.createdMinutesAgo),
      expires_at: new Date(Date.now() + fields.expiresInMinutes * 60_000),
      next_check_at: fields.nextCheckMinutes === null ? null : new Date(Date.now() + fields.nextCheckMinutes * 60_000),
    }).returning('id');
    return row.id as string;
  };
  return {
    accounts: { busy: busy.id, cooling: cooling.id },
    failed: { providerError, safety },
    payments: {
      noOrder: await payment({ createdMinutesAgo: 40, expiresInMinutes: -10, orderId: null, nextCheckMinutes: 1 }),
      pastExpiry: await payment({ createdMinutesAgo: 30, expiresInMinutes: -5, orderId: 'order-past-expiry', nextCheckMinutes: 1 }),
      checkOverdue: await payment({ createdMinutesAgo: 25, expiresInMinutes: 5, orderId: 'order-check-overdue', nextCheckMinutes: -10 }),
      waiting: await payment({ createdMinutesAgo: 20, expiresInMinutes: 10, orderId: 'order-waiting', nextCheckMinutes: 1 }),
      recent: await payment({ createdMinutesAgo: 2, expiresInMinutes: 18, orderId: 'order-recent', nextCheckMinutes: 1 }),
    },
  };
}

export interface MarketplaceData {
  authorId: string;
  /** In the order the queue lists them: the oldest round first. */
  queued: { slow: string; withModel: string; verdict: string; gaveUp: string; republished: string };
  /** In the order the live list shows them: the newest approval first. */
  live: { scripted: string; recent: string; earning: string };
  /** Pending earnings of `live.earning` (what its archive reverses), and a settled one (which stays). */
  earnings: { pending: string[]; settled: string };
  /** In neither list. */
  elsewhere: { rejected: string; archived: string; private: string };
}

/** A name as a user may type it: markup the page must show as text. */
export const scriptedName = '<script>alert("x")</script> & co';

/**
 * The marketplace as its operator sees it, made with the marketplace's own moves: five rounds in the
 * moderation queue, submitted 40, 10, 5 and 2 minutes ago and just now (one waiting with 7 failed
 * tries, one holding a provider slot, one with its verdict, one whose job pg-boss gave up on, and a
 * private one created two days ago published again now: round 2); three live effects approved 3 h
 * and 1 h ago and now, the oldest with two pending earnings and a settled one; one each rejected,
 * archived and private. Leases a slot of `seedConsoleData`'s pool.
 */
export async function seedMarketplace(): Promise<MarketplaceData> {
  const { db, boss } = services();
  const author = await makeUser();
  await db('users').where({ id: author.id }).update({ name: 'Ada <b>Author</b>' });
  const queue = async (name: string, minutesAgo: number, visibility: 'public' | 'private' = 'public') => {
    const row = await db.transaction((trx) => insertProcessing(trx, boss, {
      id: randomUUID(), user_id: author.id, visibility, name, description: '', prompt: 'a prompt', output_type: 'image',
      characters: [{ min_photos: 1, max_photos: 1 }], cost: 10, sample_key: `uploads/${author.id}/sample.jpg`,
    }));
    await db('user_effects').where({ id: row.id }).update({ submitted_at: new Date(Date.now() - minutesAgo * 60_000) });
    return row.id as string;
  };
  const moderation = 'user-effect-moderation';
  const jobOf = async (userEffectId: string) => (await jobsOf(moderation, { userEffectId }))[0].id;

  const slow = await queue('Slow portrait', 40);
  // Seven tries failed, as a worker fails them: fetched and failed back into `retry`, at once (pg-boss counts a try at each fetch after the first).
  await boss.update(moderation, undefined, { id: await jobOf(slow), retryDelay: 0 });
  for (let tries = 0; tries <= 7; tries += 1) {
    const [job] = await boss.fetch(moderation);
    await boss.fail(moderation, job.id);
  }
  const withModel = await queue('Busy portrait', 10);
  if (!(await leaseModerationSlot(db, withModel, 'simulator', 60))) throw new Error('no free slot to lease: seed the console data first');
  const verdict = await queue('Judged portrait', 5);
  await db.transaction((trx) => recordVerdict(trx, boss, { userEffectId: verdict, round: 1, verdict: 'approved', reason: null }));
  const gaveUp = await queue(scriptedName, 2, 'private');
  // pg-boss gave up on it: its one try failed.
  await boss.update(moderation, undefined, { id: await jobOf(gaveUp), retryLimit: 0 });
  await boss.fail(moderation, await jobOf(gaveUp));
  const privateBefore = await userEffectIn(author.id, 'private');
  await db('user_effects').where({ id: privateBefore.id }).update({ created_at: new Date(Date.now() - 2 * 86_400_000) });
  await db.transaction((trx) => publishUserEffect(trx, boss, { userEffectId: privateBefore.id, userId: author.id }));

  const approvedAgo = async (name: string, minutes: number) => {
    const row = await userEffectIn(author.id, 'approved');
    // The newest keeps the approval time the move itself set.
    await db('user_effects').where({ id: row.id }).update(minutes ? { name, approved_at: new Date(Date.now() - minutes * 60_000) } : { name });
    return row.id as string;
  };
  const earning = await approvedAgo('Old favourite', 180);
  const recent = await approvedAgo('Recent hit', 60);
  const scripted = await approvedAgo(scriptedName, 0);
  const pending = [(await earningOf(author.id, { userEffectId: earning, amount: 2, settlesInS: 600 })).earningId, (await earningOf(author.id, { userEffectId: earning, amount: 3, settlesInS: 600 })).earningId];
  const settled = (await earningOf(author.id, { userEffectId: earning, amount: 4 })).earningId;
  if (!(await db.transaction((trx) => settleEarning(trx, boss, settled)))) throw new Error('the due earning did not settle');

  return {
    authorId: author.id,
    queued: { slow, withModel, verdict, gaveUp, republished: privateBefore.id },
    live: { scripted, recent, earning },
    earnings: { pending, settled },
    elsewhere: {
      rejected: (await userEffectIn(author.id, 'rejected')).id,
      archived: (await userEffectIn(author.id, 'archived')).id,
      private: (await userEffectIn(author.id, 'private')).id,
    },
  };
}

/** The cells of the table row whose `data-<attribute>` is `value`, by their text, tags removed. */
export function rowCells(page: string, attribute: string, value: string): string[] {
  const row = new RegExp(`<tr data-${attribute}="${value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}">([\\s\\S]*?)</tr>`).exec(page)?.[1];
  if (row === undefined) throw new Error(`no row with data-${attribute}="${value}"`);
  return [...row.matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((cell) => cell[1].replace(/<[^>]+>/g, '').replace(/\s+/g, ' ').trim());
}

export function formTokenOf(page: string): string {
  const token = /name="csrf" value="([^"]+)"/.exec(page)?.[1];
  if (!token) throw new Error('no form token on the page');
  return token;
}
