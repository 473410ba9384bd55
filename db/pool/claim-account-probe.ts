import type { Knex } from 'knex';

/**
 * While an account's circuit is open, one call probes the provider once its retry is due: the
 * probe is claimed by pushing the retry `holdMs` on, so every other caller (of any process) waits
 * for the probe's outcome, which moves the retry again (`recordAccountFailure`) or closes the circuit
 * (`recordAccountAnswer`). Answers whether this caller may call the provider (it probes, or the
 * circuit closed meanwhile), and in how many ms the account is tried again otherwise.
 */
export async function claimAccountProbe(db: Knex, accountId: number, holdMs: number): Promise<{ go: boolean; retryInMs: number }> {
  const probe = await db.raw<{ rowCount: number }>(
    `update provider_accounts set retry_at = now() + :holdMs * interval '1 millisecond'
     where id = :accountId and circuit_opened_at is not null and (retry_at is null or retry_at <= now())`,
    { accountId, holdMs },
  );
  if (probe.rowCount === 1) return { go: true, retryInMs: 0 };
  // Read after the update, which waited for a probe claimed at the same moment: its retry is seen.
  const { rows: [row] } = await db.raw<{ rows: { open: boolean; retry_in_ms: number }[] }>(
    `select circuit_opened_at is not null as open, greatest(0, coalesce(extract(epoch from retry_at - now()) * 1000, 0))::float8 as retry_in_ms
     from provider_accounts where id = :accountId`,
    { accountId },
  );
  return row?.open ? { go: false, retryInMs: row.retry_in_ms } : { go: true, retryInMs: 0 };
}
