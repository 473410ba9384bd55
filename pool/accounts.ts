import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { freeSlot } from '../db/pool/free-slot';
import type { ProviderAccount } from '../clients/providers/adapter';
import { providerKinds, type ProviderKind } from '../common/model-route';

/** An account as configured (`PROVIDER_ACCOUNTS`, `REPLICATE_ACCOUNTS`, `FAL_ACCOUNTS` = `key:slots,...`), with its concurrency cap. */
export interface ConfiguredAccount extends ProviderAccount {
  slots: number;
}

/** What the database keeps instead of the key: keys stay in configuration, never in rows or backups. */
export function keyFingerprint(apiKey: string): string {
  return createHash('sha256').update(apiKey).digest('hex');
}

/**
 * A recognisable, non-secret name of a key for logs and operators: its first and last characters,
 * of a fal key (`key_id:key_secret`) those of its id only.
 */
export function labelOf(apiKey: string): string {
  const shown = apiKey.includes(':') ? apiKey.slice(0, apiKey.indexOf(':')) : apiKey;
  return shown.length <= 8 ? `${shown.slice(0, 2)}…` : `${shown.slice(0, 4)}…${shown.slice(-3)}`;
}

/** The accounts as the start log names them: kind, label and slots, never a key. */
export function accountsForLog(accounts: readonly ConfiguredAccount[]): { kind: ProviderKind; label: string; slots: number }[] {
  return accounts.map((account) => ({ kind: account.kind, label: labelOf(account.apiKey), slots: account.slots }));
}

/**
 * Makes `provider_accounts` and `provider_slots` match the configuration, at every worker start:
 * configured keys are enabled with their kind and slot count, keys no longer configured are disabled (their
 * running tasks finish), one slot row exists per slot. Surplus slot rows of a shrunk account are
 * deleted once free; until then the lease statement ignores them (`slot_no < slots`). An advisory
 * lock serialises workers that start together.
 */
export async function syncProviderAccounts(db: Knex, accounts: ConfiguredAccount[]): Promise<void> {
  await db.transaction(async (trx) => {
    await trx.raw("select pg_advisory_xact_lock(hashtext('provider_accounts_sync'))");
    const fingerprints = accounts.map((account) => keyFingerprint(account.apiKey));
    for (const [index, account] of accounts.entries()) {
      await trx.raw(
        `insert into provider_accounts (key_fingerprint, kind, label, slots, enabled) values (:fingerprint, :kind, :label, :slots, true)
         on conflict (key_fingerprint) do update
           set kind = excluded.kind, slots = excluded.slots, label = excluded.label, enabled = true, updated_at = now()
           where provider_accounts.slots <> excluded.slots or provider_accounts.kind <> excluded.kind or not provider_accounts.enabled`,
        { fingerprint: fingerprints[index], kind: account.kind, label: labelOf(account.apiKey), slots: account.slots },
      );
    }
    await trx.raw(
      'update provider_accounts set enabled = false, updated_at = now() where enabled and key_fingerprint <> all(:fingerprints::text[])',
      { fingerprints },
    );
    await trx.raw(
      `insert into provider_slots (account_id, slot_no)
       select a.id, n from provider_accounts a cross join lateral generate_series(0, a.slots - 1) as n
       where a.enabled
       on conflict do nothing`,
    );
    await trx.raw(
      `delete from provider_slots s using provider_accounts a
       where a.id = s.account_id and s.slot_no >= a.slots and ${freeSlot('s')}`,
    );
  });
}

/** Maps the pool's account ids back to the keys this process was configured with. */
export class AccountKeys {
  private byId = new Map<number, ProviderAccount>();
  /** The read under way: submissions that ask together share it. */
  private loading: Promise<void> | null = null;

  /** Fingerprints of the keys this process was configured with: the only accounts it leases slots of (every round names them). */
  readonly fingerprints: string[];

  constructor(
    private readonly db: Knex,
    private readonly accounts: ConfiguredAccount[],
  ) {
    this.fingerprints = accounts.map((account) => keyFingerprint(account.apiKey));
    this.kinds = providerKinds.filter((kind) => accounts.some((account) => account.kind === kind));
  }

  /** The provider kinds this process has keys for: the lines its dispatcher serves. */
  readonly kinds: ProviderKind[];

  /**
   * The key files are staged with at a provider of `kind` (`ProviderAdapter.stageFile`): its links
   * serve every account's tasks of that kind.
   */
  fileKey(kind: ProviderKind): ProviderAccount | null {
    const first = this.accounts.find((account) => account.kind === kind);
    return first ? { kind: first.kind, apiKey: first.apiKey } : null;
  }

  /** The key of account `id`, or null when this process does not know it (a key removed from configuration). */
  async keyOf(id: number): Promise<ProviderAccount | null> {
    if (!this.byId.has(id)) await this.load();
    return this.byId.get(id) ?? null;
  }

  /** Reads the account ids again; at a worker's start, so that its first submissions need no read. */
  load(): Promise<void> {
    this.loading ??= this.read().finally(() => {
      this.loading = null;
    });
    return this.loading;
  }

  private async read(): Promise<void> {
    const keys = new Map(this.accounts.map((account, index) => [this.fingerprints[index], { kind: account.kind, apiKey: account.apiKey }]));
    const rows: { id: number; key_fingerprint: string }[] = await this.db('provider_accounts').select('id', 'key_fingerprint');
    this.byId = new Map(rows.flatMap((row) => {
      const account = keys.get(row.key_fingerprint);
      return account === undefined ? [] : [[row.id, account] as const];
    }));
  }
}
