import type { Knex } from 'knex';
import type { ProviderKind } from '../../common/model-route';

export interface AccountFailure {
  failures: number;
  /** This statement opened the account's circuit: its caller tells of it, once across every process. */
  opened: boolean;
  /** The circuit is open (now or since before). */
  open: boolean;
  /** When the account is tried again, in ms from now. */
  retryInMs: number;
  label: string;
  kind: ProviderKind;
}

/**
 * A call on the account got no answer from the provider: one more failure in a row, the account
 * tried again only after the backoff of that many failures (`delaysMs[n - 1]`, the last for more),
 * and the circuit opened when the failures reach
 * `threshold`. The failures are counted under the row's lock, so exactly one caller reaches the
 * threshold: it alone answers `opened`.
 */
export async function recordAccountFailure(db: Knex, accountId: number, settings: { threshold: number; delaysMs: number[] }): Promise<AccountFailure | null> {
  const { rows: [row] } = await db.raw<{ rows: (Omit<AccountFailure, 'opened'> & { opened: boolean })[] }>(
    `update provider_accounts
     set failures = failures + 1,
       circuit_opened_at = case when failures + 1 >= :threshold then coalesce(circuit_opened_at, now()) end,
       retry_at = now() + (:delaysMs::integer[])[least(failures + 1, cardinality(:delaysMs::integer[]))] * interval '1 millisecond'
     where id = :accountId
     returning failures, failures = :threshold as opened, circuit_opened_at is not null as open, label, kind,
       greatest(0, extract(epoch from retry_at - now()) * 1000)::float8 as "retryInMs"`,
    { accountId, threshold: settings.threshold, delaysMs: settings.delaysMs },
  );
  return row ?? null;
}
