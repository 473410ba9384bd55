import type { Knex } from 'knex';

/**
 * The credit ledger. Every balance change is one row in `credit_transactions`, written in the
 * caller's transaction together with the change of `users.balance`, so the balance always equals the
 * sum of the user's rows. `(user, kind, reference)` is unique: applying the same operation twice
 * (a retried job, a repeated notification) writes nothing and answers null.
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
  const existing = await trx('credit_transactions')
    .where({ user_id: operation.userId, kind: operation.kind, reference: operation.reference })
    .first('id');
  return { balance: user.balance, applied: existing !== undefined };
}

/** Moves the balance by `delta` (signed) and appends the row, in one statement. */
async function apply(trx: Knex.Transaction, operation: LedgerOperation, delta: number): Promise<LedgerEntry> {
  const { rows } = await trx.raw<{ rows: TransactionRow[] }>(
    `with moved as (
       update users set balance = balance + :delta where id = :userId returning balance
     )
     insert into credit_transactions (user_id, kind, amount, balance_after, reference)
     select :userId, :kind, :delta, balance, :reference from moved
     returning id, user_id, kind, amount, balance_after, reference, created_at`,
    { delta, userId: operation.userId, kind: operation.kind, reference: operation.reference },
  );
  return entryOf(rows[0]);
}

/** Adds credits. Null when this (user, kind, reference) was applied before. */
export async function credit(trx: Knex.Transaction, operation: LedgerOperation): Promise<LedgerEntry | null> {
  checkAmount(operation);
  const { applied } = await lockUser(trx, operation);
  if (applied) return null;
  return apply(trx, operation, operation.amount);
}

/** Whether a balance covers a debit of `amount`: the one rule `debit` and `debitCoverage` share. */
function covers(balance: number, amount: number): boolean {
  return balance >= amount;
}

/** Takes credits. `'insufficient'` (nothing written) when the balance is lower; null when applied before. */
export async function debit(trx: Knex.Transaction, operation: LedgerOperation): Promise<LedgerEntry | 'insufficient' | null> {
  checkAmount(operation);
  const { balance, applied } = await lockUser(trx, operation);
  if (applied) return null;
  if (!covers(balance, operation.amount)) return 'insufficient';
  return apply(trx, operation, -operation.amount);
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
 * Takes as much of `amount` as the balance holds (a revoked purchase whose credits were partly
 * spent): the balance never goes negative. A row is written even when nothing is left to take, so
 * the operation is recorded once and a repeat stays a no-op. Null when applied before.
 */
export async function debitUpTo(trx: Knex.Transaction, operation: LedgerOperation): Promise<LedgerEntry | null> {
  checkAmount(operation);
  const { balance, applied } = await lockUser(trx, operation);
  if (applied) return null;
  const taken = Math.min(operation.amount, balance);
  return apply(trx, operation, taken === 0 ? 0 : -taken);
}
