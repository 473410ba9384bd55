import { signAccessToken } from '../api/tokens/access-token';
import { credit } from '../db/credits/ledger';
import { services } from './harness';

export interface TestUser {
  id: string;
  token: string;
}

/**
 * The one way tests make a user: straight in the database, with an access token (an hour, or
 * `tokenTtlS`: a negative one is expired). A full account by default, or a guest; `balance` arrives
 * as one ledger row (`welcome`, `test-seed`); `ageDays` backdates the account.
 */
export async function makeUser(options: {
  guest?: boolean;
  email?: string;
  balance?: number;
  locale?: 'ru' | 'en';
  ageDays?: number;
  tokenTtlS?: number;
} = {}): Promise<TestUser> {
  const { db, config } = services();
  const [row] = await db('users')
    .insert({
      is_anonymous: options.guest ?? false,
      email: options.email ?? null,
      locale: options.locale ?? 'ru',
      ...(options.ageDays === undefined ? {} : { created_at: new Date(Date.now() - options.ageDays * 86_400_000) }),
    })
    .returning('id');
  if (options.balance) await db.transaction((trx) => credit(trx, { userId: row.id, kind: 'welcome', amount: options.balance!, reference: 'test-seed' }));
  return { id: row.id, token: await signAccessToken(config.tokenSecret, row.id, options.tokenTtlS ?? 3600) };
}
