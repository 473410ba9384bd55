import type { Knex } from 'knex';
import type { ProviderKind } from '../../common/model-route';

/**
 * The provider answered a call on an account that had failures in a row: they are forgotten, and
 * its circuit closed. Guarded on failures, so an account without any is not written; answers the
 * circuit that this statement closed (once across every process), or null.
 */
export async function recordAccountAnswer(db: Knex, accountId: number): Promise<{ label: string; kind: ProviderKind; openS: number } | null> {
  const { rows: [row] } = await db.raw<{ rows: { closed: boolean; label: string; kind: ProviderKind; open_s: number }[] }>(
    `update provider_accounts a
     set failures = 0, retry_at = null, circuit_opened_at = null
     from (select id, circuit_opened_at from provider_accounts where id = :accountId and failures > 0 for update) before
     where a.id = before.id
     returning before.circuit_opened_at is not null as closed, a.label, a.kind,
       coalesce(extract(epoch from now() - before.circuit_opened_at), 0)::float8 as open_s`,
    { accountId },
  );
  return row?.closed ? { label: row.label, kind: row.kind, openS: row.open_s } : null;
}
