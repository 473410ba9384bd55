import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { Answer, Api } from './client';
import { services } from './harness';

/** Shared steps of the account tests: real HTTP against a test app. */
export type { Api };

export function newDeviceId(): string {
  return `device-${randomUUID()}`;
}

export function newEmail(): string {
  return `user-${randomUUID().slice(0, 8)}@example.com`;
}

export const password = 'correct horse battery';

export function expectError(answer: Answer, status: number, code: string): void {
  expect(answer.status, answer.text).to.equal(status);
  expect(answer.body.error.code, answer.text).to.equal(code);
}

export async function guest(api: Api, deviceId = newDeviceId(), refCode?: string): Promise<Answer> {
  const answer = await api.post('/v1/auth/anonymous', { device_id: deviceId, ...(refCode === undefined ? {} : { ref_code: refCode }) });
  expect(answer.status, answer.text).to.equal(200);
  return answer;
}

export async function registered(
  api: Api,
  fields: { email?: string; password?: string; name?: string; device_id?: string; ref_code?: string } = {},
  token?: string,
): Promise<Answer> {
  const answer = await api.post('/v1/auth/register', { email: newEmail(), password, device_id: newDeviceId(), ...fields }, { token });
  expect(answer.status, answer.text).to.equal(201);
  return answer;
}

/** Every balance equals the sum of its ledger rows, and every row's balance_after chains. */
export async function expectLedgerConsistent(): Promise<void> {
  const { db } = services();
  const { rows } = await db.raw(`
    select u.id, u.balance, coalesce(sum(t.amount), 0)::integer as sum
    from users u left join credit_transactions t on t.user_id = u.id
    group by u.id, u.balance having u.balance <> coalesce(sum(t.amount), 0)`);
  expect(rows, 'users whose balance differs from the sum of their transactions').to.deep.equal([]);
  const { rows: broken } = await db.raw(`
    select id from (
      select id, balance_after, sum(amount) over (partition by user_id order by seq) as running from credit_transactions
    ) chained where balance_after <> running`);
  expect(broken, 'rows whose balance_after is not the running sum').to.deep.equal([]);
}

export async function transactionsOf(userId: string): Promise<{ kind: string; amount: number; reference: string }[]> {
  return services().db('credit_transactions').where({ user_id: userId }).orderBy('seq').select('kind', 'amount', 'reference');
}
