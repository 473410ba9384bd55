import type { Knex } from 'knex';

/**
 * The credit ledger. Every balance change is one row in `credit_transactions`, written in the
 * caller's transaction with the change of `users.balance`, so the balance always equals the sum of
 * the rows. `(user, kind, reference)` is unique: the same operation twice writes nothing, answers null.
 *
 * Plan credits are buckets inside the balance, one per paid period (`plan_grant`, burned by
 * `plan_expired`). A reserve spends the bucket that burns soonest first and records its `plan_share`;
 * its refund gives each part back, or burns it again at once when its bucket has burned meanwhile.
 * A revoked purchase takes only credits outside the buckets. All under the user's row lock.
 * The statements name their columns (no `*`) so that connections keep them prepared.
 */
export type CreditKind =
  | 'guest_start'
  | 'welcome'
  | 'reserve'
  | 'refund'
  | 'purchase'
  | 'purchase_revoke'
  | 'referral_bonus'
  | 'referral_earned'
  | 'plan_grant'
  | 'plan_expired'
  | 'effect_earned';

export interface LedgerEntry {
  id: string;
  userId: string;
  kind: CreditKind;
  /** Signed: positive for credits, negative for debits. */
  amount: number;
  balanceAfter: number;
  reference: string;
  createdAt: Date;
}

export interface LedgerOperation {
  userId: string;
  kind: CreditKind;
  /** A positive whole number of credits. */
  amount: number;
  /** What the operation is about (a generation id, a payment id, `referral:<user id>`). */
  reference: string;
  /**
   * The reference was made for this operation just now (a new generation's id): no earlier twin
   * can exist, so the statement looking for one is left out (the unique key would refuse a twin).
   */
  fresh?: true;
}

/** Credits a row took from a bucket or gave back to it. */
export interface PlanPart {
  bucket: string;
  amount: number;
}

interface TransactionRow {
  id: string;
  user_id: string;
  kind: CreditKind;
  amount: number;
  balance_after: number;
  reference: string;
  created_at: Date;
}

function entryOf(row: TransactionRow): LedgerEntry {
  return {
    id: row.id,
    userId: row.user_id,
    kind: row.kind,
    amount: row.amount,
    balanceAfter: row.balance_after,
    reference: row.reference,
    createdAt: row.created_at,
  };
}

function checkAmount(operation: LedgerOperation): void {
  if (!Number.isSafeInteger(operation.amount) || operation.amount <= 0) {
    throw new RangeError(`ledger amount must be a positive integer, got ${operation.amount}`);
  }
}

/**
 * Locks the user's row and tells its balance and whether this operation was applied already.
 * The existence check is a separate statement on purpose: in READ COMMITTED a statement that waited
 * for the lock keeps its old snapshot for subqueries, so a twin operation committed while we waited
 * would be invisible to a combined query. After the lock a new statement sees it.
 */
async function lockUser(trx: Knex.Transaction, operation: LedgerOperation): Promise<{ balance: number; applied: boolean }> {
  const user = await trx('users').where({ id: operation.userId }).forUpdate().first<{ balance: number } | undefined>('balance');
  if (!user) throw new Error(`ledger: user ${operation.userId} does not exist`);
  if (operation.fresh) return { balance: user.balance, applied: false };
  const existing = await trx('credit_transactions')
    .where({ user_id: operation.userId, kind: operation.kind, reference: operation.reference })
    .first('id');
  return { balance: user.balance, applied: existing !== undefined };
}

/** Moves the balance by `delta` (signed) and appends the row, in one statement. */
async function apply(trx: Knex.Transaction, operation: LedgerOperation, delta: number, planShare: PlanPart[] = []): Promise<LedgerEntry> {
  const { rows } = await trx.raw<{ rows: TransactionRow[] }>(
    `with moved as (
       update users set balance = balance + :delta where id = :userId returning balance
     )
     insert into credit_transactions (user_id, kind, amount, balance_after, reference, plan_share)
     select :userId, :kind, :delta, balance, :reference, :planShare::jsonb from moved
     returning id, user_id, kind, amount, balance_after, reference, created_at`,
    {
      delta,
      userId: operation.userId,
      kind: operation.kind,
      reference: operation.reference,
      planShare: planShare.length ? JSON.stringify(planShare) : null,
    },
  );
  return entryOf(rows[0]);
}

/** Adds credits. Null when this (user, kind, reference) was applied before. A `refund` returns its reserve's plan parts to their buckets. */
export async function credit(trx: Knex.Transaction, operation: LedgerOperation): Promise<LedgerEntry | null> {
  checkAmount(operation);
  const { applied } = await lockUser(trx, operation);
  if (applied) return null;
  if (operation.kind === 'refund') return refundReserve(trx, operation);
  return apply(trx, operation, operation.amount);
}

/** Whether a balance covers a debit of `amount`: the one rule `debit` and `debitCoverage` share. */
function covers(balance: number, amount: number): boolean {
  return balance >= amount;
}

/**
 * A debit refused for want of credits, nothing written: what it would take and the balance it found
 * under the user's lock, so a message quoting both needs no second read (which could race another spend).
 */
export class Shortfall {
  constructor(readonly amount: number, readonly balance: number) {}
}

/** Takes credits, plan credits first. A `Shortfall` when the balance is lower; null when applied before. */
export async function debit(trx: Knex.Transaction, operation: LedgerOperation): Promise<LedgerEntry | Shortfall | null> {
  checkAmount(operation);
  const { balance, applied } = await lockUser(trx, operation);
  if (applied) return null;
  if (!covers(balance, operation.amount)) return new Shortfall(operation.amount, balance);
  return applyDebit(trx, operation);
}

/**
 * Whether `debit` of `amount` would succeed now, and the balance it would take from: an estimate
 * that reads only (no lock, no row), so a concurrent spend may still change the outcome.
 */
export async function debitCoverage(db: Knex, userId: string, amount: number): Promise<{ balance: number; enough: boolean }> {
  const user = await db('users').where({ id: userId }).first<{ balance: number } | undefined>('balance');
  if (!user) throw new Error(`ledger: user ${userId} does not exist`);
  return { balance: user.balance, enough: covers(user.balance, amount) };
}

/**
 * Takes as much of `amount` as the balance holds outside the plan buckets (a revoked purchase whose
 * credits were partly spent): the balance never goes negative and plan credits stay the plan's. A
 * row is written even when nothing is left to take, so the operation is recorded once and a repeat
 * stays a no-op. Null when applied before.
 */
export async function debitUpTo(trx: Knex.Transaction, operation: LedgerOperation): Promise<LedgerEntry | null> {
  checkAmount(operation);
  const { balance, applied } = await lockUser(trx, operation);
  if (applied) return null;
  const taken = Math.min(operation.amount, balance - (await openPlanCredits(trx, operation.userId)));
  return apply(trx, operation, taken <= 0 ? 0 : -taken);
}

/**
 * A paid subscription period's credits, as a new bucket that burns at `expiresAt` (the period
 * end) and one `plan_grant` row whose reference is the period's payment. Null when that period was
 * granted before.
 */
export async function grantPlanCredits(
  trx: Knex.Transaction,
  grant: { userId: string; subscriptionId: string; paymentId: string; amount: number; expiresAt: Date },
): Promise<LedgerEntry | null> {
  const operation: LedgerOperation = { userId: grant.userId, kind: 'plan_grant', amount: grant.amount, reference: grant.paymentId };
  checkAmount(operation);
  const { applied } = await lockUser(trx, operation);
  if (applied) return null;
  // The bucket, the balance and the row in one statement (`apply`'s, with the new bucket as its plan share).
  const { rows: [row] } = await trx.raw<{ rows: TransactionRow[] }>(
    `with bucket as (
       insert into plan_credit_buckets (user_id, subscription_id, payment_id, granted, credits, expires_at)
       values (:userId, :subscriptionId, :paymentId, :amount, :amount, :expiresAt)
       returning id
     ),
     moved as (
       update users set balance = balance + :amount where id = :userId returning balance
     )
     insert into credit_transactions (user_id, kind, amount, balance_after, reference, plan_share)
     select :userId, 'plan_grant', :amount, moved.balance, :paymentId, jsonb_build_array(jsonb_build_object('bucket', bucket.id, 'amount', :amount::integer))
     from moved, bucket
     returning id, user_id, kind, amount, balance_after, reference, created_at`,
    grant,
  );
  return entryOf(row);
}

/**
 * Burns what is left in the subscription's open buckets (its current period's): one `plan_expired`
 * row per bucket that still held credits, with the period's payment as reference. A bucket burns
 * once; a second call finds none open and writes nothing.
 */
export async function burnPlanCredits(trx: Knex.Transaction, owner: { userId: string; subscriptionId: string }): Promise<LedgerEntry[]> {
  return burnPlanCreditsOf(trx, [owner]);
}

/**
 * `burnPlanCredits` for many subscriptions at once (the clock's batch of renewals), in two
 * statements whatever their number: the owners' rows locked in id order (the order every batch
 * takes, so two never wait on each other), then the buckets burned, the balances moved and the rows
 * written in one. A user with several open buckets gets one row each, their `balance_after` in
 * bucket order as one by one would have written them.
 */
export async function burnPlanCreditsOf(trx: Knex.Transaction, owners: readonly { userId: string; subscriptionId: string }[]): Promise<LedgerEntry[]> {
  if (owners.length === 0) return [];
  await trx.raw('select id from users where id = any(?::uuid[]) order by id for update', [[...new Set(owners.map((owner) => owner.userId))]]);
  const { rows } = await trx.raw<{ rows: TransactionRow[] }>(
    `with open as (
       select id, user_id, payment_id, credits from plan_credit_buckets
       where subscription_id = any(:subscriptionIds::uuid[]) and burned_at is null
     ),
     burned as (
       update plan_credit_buckets b set credits = 0, burned_at = now()
       from open where b.id = open.id
       returning open.id, open.user_id, open.payment_id, open.credits
     ),
     -- An empty bucket closes without a row.
     spent as (select id, user_id, payment_id, credits from burned where credits > 0),
     moved as (
       update users u set balance = u.balance - total.credits
       from (select user_id, sum(credits)::integer as credits from spent group by user_id) as total
       where u.id = total.user_id
       returning u.id, u.balance
     )
     insert into credit_transactions (user_id, kind, amount, balance_after, reference, plan_share)
     select spent.user_id, 'plan_expired', -spent.credits,
       -- What the balance was after this bucket burned: the new balance plus the buckets burned after it.
       moved.balance + coalesce(sum(spent.credits) over (partition by spent.user_id order by spent.id rows between 1 following and unbounded following), 0),
       spent.payment_id, jsonb_build_array(jsonb_build_object('bucket', spent.id, 'amount', spent.credits))
     from spent join moved on moved.id = spent.user_id
     order by spent.user_id, spent.id
     returning id, user_id, kind, amount, balance_after, reference, created_at`,
    { subscriptionIds: owners.map((owner) => owner.subscriptionId) },
  );
  return rows.map(entryOf);
}

/** Whether this (user, kind, reference) was applied. */
export async function hasEntry(db: Knex, operation: Omit<LedgerOperation, 'amount'>): Promise<boolean> {
  const row = await db('credit_transactions').where({ user_id: operation.userId, kind: operation.kind, reference: operation.reference }).first('id');
  return row !== undefined;
}

/** The plan credits inside the balance and when the first of them burn (null without an open bucket). */
export async function planCreditsOf(db: Knex, userId: string): Promise<{ credits: number; expiresAt: Date | null }> {
  const { rows: [row] } = await db.raw<{ rows: { credits: number; expires_at: Date | null }[] }>(
    `select coalesce(sum(credits), 0)::integer as credits, min(expires_at) as expires_at
     from plan_credit_buckets where user_id = ? and burned_at is null`,
    [userId],
  );
  return { credits: row.credits, expiresAt: row.expires_at };
}

async function openPlanCredits(trx: Knex.Transaction, userId: string): Promise<number> {
  return (await planCreditsOf(trx, userId)).credits;
}

/**
 * `apply` of a debit that spends from the open buckets first, the one that burns soonest first, in
 * one statement: each bucket gives what is still missing after the buckets before it (a running
 * sum), and the row records what came from which, in that order. After `lockUser`'s statement, so
 * it sees every bucket change committed while the lock was awaited.
 */
async function applyDebit(trx: Knex.Transaction, operation: LedgerOperation): Promise<LedgerEntry> {
  const { rows } = await trx.raw<{ rows: TransactionRow[] }>(
    `with open_buckets as (
       select id, credits, sum(credits) over (order by expires_at, id) as through
       from plan_credit_buckets
       where user_id = :userId and burned_at is null and credits > 0
     ), parts as (
       select id, least(credits, :amount - (through - credits)) as amount, through
       from open_buckets where through - credits < :amount
     ), spent as (
       update plan_credit_buckets b set credits = b.credits - parts.amount from parts where b.id = parts.id
     ), moved as (
       update users set balance = balance - :amount where id = :userId returning balance
     )
     insert into credit_transactions (user_id, kind, amount, balance_after, reference, plan_share)
     select :userId, :kind, -cast(:amount as integer), balance, :reference,
       (select jsonb_agg(jsonb_build_object('bucket', id, 'amount', amount) order by through) from parts)
     from moved
     returning id, user_id, kind, amount, balance_after, reference, created_at`,
    { userId: operation.userId, kind: operation.kind, amount: operation.amount, reference: operation.reference },
  );
  return entryOf(rows[0]);
}

/**
 * The refund of a reserve (same reference): each plan part goes back to its bucket while that is
 * open; the parts whose bucket burned meanwhile are burned at once, as a `plan_expired` row right
 * after the `refund` row, with the same reference. A partial refund returns plan parts first.
 */
async function refundReserve(trx: Knex.Transaction, operation: LedgerOperation): Promise<LedgerEntry> {
  const reserve = await trx('credit_transactions')
    .where({ user_id: operation.userId, kind: 'reserve', reference: operation.reference })
    .first<{ plan_share: PlanPart[] | null } | undefined>('plan_share');
  const returned: PlanPart[] = [];
  let burned = 0;
  let left = operation.amount;
  for (const part of reserve?.plan_share ?? []) {
    const amount = Math.min(part.amount, left);
    if (amount === 0) break;
    left -= amount;
    const back = await trx('plan_credit_buckets').where({ id: part.bucket }).whereNull('burned_at').increment('credits', amount);
    if (back === 1) returned.push({ bucket: part.bucket, amount });
    else burned += amount;
  }
  const entry = await apply(trx, operation, operation.amount, returned);
  if (burned > 0) await apply(trx, { ...operation, kind: 'plan_expired', amount: burned }, -burned);
  return entry;
}
