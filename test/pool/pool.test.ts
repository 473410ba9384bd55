import type { Knex } from 'knex';
import { expect } from 'chai';
import { AccountKeys, accountsForLog, keyFingerprint, syncProviderAccounts } from '../../pool/accounts';
import { coolDownAccount } from '../../db/pool/cool-down-account';
import { leaseSlots } from '../../db/pool/lease-slots';
import { releaseGenerationSlot } from '../../db/pool/release-generation-slot';
import { renewSlotLease } from '../../db/pool/renew-slot-lease';
import { waitingGenerations } from '../generation-fixtures';
import { resetDatabase, services } from '../harness';

/** One slot for one generation, or null when none is free. */
const leaseOne = async (db: Knex, generationId: string, leaseS: number, knownAccounts: string[] | null = null) => (await leaseSlots(db, [generationId], leaseS, knownAccounts))[0] ?? null;

/** The keys of `ids`, asked one after the other. */
async function keyOfAll(keys: AccountKeys, ids: number[]) {
  const found = [];
  for (const id of ids) found.push(await keys.keyOf(id));
  return found;
}

describe('provider-account pool', () => {
  let generations: string[];

  beforeEach(async () => {
    await resetDatabase();
    generations = await waitingGenerations(20);
  });

  const db = () => services().db;
  const leasedSlots = async () => db()('provider_slots').whereNotNull('generation_id').andWhere('lease_expires_at', '>', db().fn.now()).count<{ count: number }[]>('* as count').then(([row]) => row.count);

  it('syncs accounts and one row per slot from the configuration, keeping only a fingerprint of each key', async () => {
    await syncProviderAccounts(db(), [{ kind: 'simulator', apiKey: 'secret-key-one', slots: 3 }, { kind: 'simulator', apiKey: 'secret-key-two', slots: 1 }]);
    const accounts = await db()('provider_accounts').orderBy('id').select('key_fingerprint', 'label', 'slots', 'enabled');
    expect(accounts).to.deep.equal([
      { key_fingerprint: keyFingerprint('secret-key-one'), label: 'secr…one', slots: 3, enabled: true },
      { key_fingerprint: keyFingerprint('secret-key-two'), label: 'secr…two', slots: 1, enabled: true },
    ]);
    expect(JSON.stringify(await db()('provider_accounts').select('*'))).not.to.contain('secret-key');
    expect(await db()('provider_slots').count<{ count: number }[]>('* as count')).to.deep.equal([{ count: 4 }]);

    // A key taken out of configuration is disabled; a changed slot count reshapes the slots.
    await syncProviderAccounts(db(), [{ kind: 'simulator', apiKey: 'secret-key-one', slots: 1 }]);
    expect(await db()('provider_accounts').orderBy('id').select('slots', 'enabled')).to.deep.equal([{ slots: 1, enabled: true }, { slots: 1, enabled: false }]);
    expect(await db()('provider_slots').count<{ count: number }[]>('* as count')).to.deep.equal([{ count: 2 }]);
    expect(await leaseOne(db(), generations[0], 60)).to.deep.include({ slotNo: 0 });
    expect(await leaseOne(db(), generations[1], 60)).to.equal(null, 'neither the disabled account nor a surplus slot is leased');
  });

  it('keeps the kind of each account, and names a fal key by its id only', async () => {
    await syncProviderAccounts(db(), [{ kind: 'simulator', apiKey: 'secret-key-one', slots: 1 }, { kind: 'fal', apiKey: 'fal-key-id-7:fal-secret-xyz', slots: 2 }]);
    expect(await db()('provider_accounts').orderBy('id').select('kind', 'label', 'slots')).to.deep.equal([
      { kind: 'simulator', label: 'secr…one', slots: 1 },
      { kind: 'fal', label: 'fal-…d-7', slots: 2 },
    ]);
    // The same key configured under another kind is that kind's account from then on.
    await syncProviderAccounts(db(), [{ kind: 'replicate', apiKey: 'secret-key-one', slots: 1 }, { kind: 'fal', apiKey: 'fal-key-id-7:fal-secret-xyz', slots: 2 }]);
    expect(await db()('provider_accounts').orderBy('id').pluck('kind')).to.deep.equal(['replicate', 'fal']);
    expect(JSON.stringify(await db()('provider_accounts').select('*'))).not.to.match(/secret/);
    expect(accountsForLog([{ kind: 'fal', apiKey: 'fal-key-id-7:fal-secret-xyz', slots: 2 }])).to.deep.equal([{ kind: 'fal', label: 'fal-…d-7', slots: 2 }]);
  });

  it('maps account ids to the configured keys with one read, shared by callers that ask together', async () => {
    const configured = [{ kind: 'simulator' as const, apiKey: 'secret-key-one', slots: 1 }, { kind: 'simulator' as const, apiKey: 'secret-key-two', slots: 1 }];
    await syncProviderAccounts(db(), configured);
    await syncProviderAccounts(db(), [...configured, { kind: 'simulator', apiKey: 'not-in-this-process', slots: 1 }]);
    const ids = await db()('provider_accounts').orderBy('id').pluck('id');
    let reads = 0;
    const countReads = (query: { sql: string }) => {
      if (query.sql.includes('provider_accounts')) reads += 1;
    };
    db().on('query', countReads);
    try {
      const keys = new AccountKeys(db(), configured);
      expect(await Promise.all([keyOfAll(keys, ids), keyOfAll(keys, ids)])).to.deep.equal(Array(2).fill([{ kind: 'simulator', apiKey: 'secret-key-one' }, { kind: 'simulator', apiKey: 'secret-key-two' }, null]));
      expect(reads).to.equal(2, 'the first callers share one read; the unknown id reads once more');
      const loaded = new AccountKeys(db(), configured);
      await loaded.load();
      reads = 0;
      expect(await loaded.keyOf(ids[1])).to.deep.equal({ kind: 'simulator', apiKey: 'secret-key-two' });
      expect(reads).to.equal(0, 'loaded at start: no read at the first submission');
    } finally {
      db().off('query', countReads);
    }
  });

  it('never gives one slot to two concurrent leasers', async () => {
    await syncProviderAccounts(db(), [{ kind: 'simulator', apiKey: 'a', slots: 3 }, { kind: 'simulator', apiKey: 'b', slots: 2 }]);
    const leases = await Promise.all(generations.map((id) => leaseOne(db(), id, 60)));
    const granted = leases.filter((lease) => lease !== null);
    expect(granted).to.have.length(5);
    expect(new Set(granted.map((lease) => `${lease!.accountId}:${lease!.slotNo}`)).size).to.equal(5);
    expect(await leasedSlots()).to.equal(5);
  });

  it('spreads leases over accounts: slot 0 of every account before slot 1 of any', async () => {
    await syncProviderAccounts(db(), [{ kind: 'simulator', apiKey: 'a', slots: 2 }, { kind: 'simulator', apiKey: 'b', slots: 2 }]);
    const first = await leaseOne(db(), generations[0], 60);
    const second = await leaseOne(db(), generations[1], 60);
    expect([first!.slotNo, second!.slotNo]).to.deep.equal([0, 0]);
    expect(first!.accountId).not.to.equal(second!.accountId);
  });

  it('takes back an expired lease by itself; a renewed one stays', async () => {
    await syncProviderAccounts(db(), [{ kind: 'simulator', apiKey: 'a', slots: 2 }]);
    await leaseOne(db(), generations[0], 1);
    await leaseOne(db(), generations[1], 1);
    await renewSlotLease(db(), generations[1], 60);
    expect(await leaseOne(db(), generations[2], 60)).to.equal(null);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const again = await leaseOne(db(), generations[2], 60);
    expect(again).to.not.equal(null);
    expect(await leaseOne(db(), generations[3], 60)).to.equal(null);
    expect(await releaseGenerationSlot(db(), generations[0])).to.equal(0, 'the crashed holder lost its slot');
  });

  it('skips an account while it cools down after a 429', async () => {
    await syncProviderAccounts(db(), [{ kind: 'simulator', apiKey: 'a', slots: 1 }, { kind: 'simulator', apiKey: 'b', slots: 1 }]);
    const [busy] = await db()('provider_accounts').where({ key_fingerprint: keyFingerprint('a') }).select('id');
    await coolDownAccount(db(), busy.id, 1);
    const only = await leaseOne(db(), generations[0], 60);
    expect(only!.accountId).not.to.equal(busy.id);
    expect(await leaseOne(db(), generations[1], 60)).to.equal(null);
    await coolDownAccount(db(), busy.id, 0);
    expect(await leaseOne(db(), generations[1], 60)).to.equal(null, 'a cooldown is never shortened');
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect(await leaseOne(db(), generations[1], 60)).to.deep.include({ accountId: busy.id });
  });

  it('leases only slots of accounts the caller has keys for', async () => {
    await syncProviderAccounts(db(), [{ kind: 'simulator', apiKey: 'a', slots: 1 }, { kind: 'simulator', apiKey: 'b', slots: 1 }]);
    const known = [keyFingerprint('b')];
    const [b] = await db()('provider_accounts').where({ key_fingerprint: keyFingerprint('b') }).select('id');
    expect(await leaseOne(db(), generations[0], 60, known)).to.deep.include({ accountId: b.id });
    expect(await leaseOne(db(), generations[1], 60, known)).to.equal(null);
    expect(await leaseOne(db(), generations[1], 60)).to.not.equal(null);
  });

  it('releases only the generation it is asked for', async () => {
    await syncProviderAccounts(db(), [{ kind: 'simulator', apiKey: 'a', slots: 2 }]);
    await leaseOne(db(), generations[0], 60);
    await leaseOne(db(), generations[1], 60);
    expect(await releaseGenerationSlot(db(), generations[0])).to.equal(1);
    expect(await releaseGenerationSlot(db(), generations[0])).to.equal(0);
    expect(await leasedSlots()).to.equal(1);
  });
});
