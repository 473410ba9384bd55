import type { Knex } from 'knex';
import type { Storage } from '../../media/storage';
import { balanceOf, balanceProperties } from '../credits/history';
import { schema } from '../../common/validation';

/** The User resource of the contract (in `GET /v1/me`, profile answers and every TokenResponse). */
export interface UserView {
  id: string;
  email: string | null;
  name: string | null;
  locale: string;
  is_anonymous: boolean;
  providers: string[];
  balance: number;
  /** Beside `balance` wherever it appears: the plan credits inside it and when they burn. */
  plan_credits: number;
  plan_expires_at: string | null;
  avatar_url: string | null;
}

export const userSchema = schema.response({
  id: schema.uuid(),
  email: schema.nullable(schema.string()),
  name: schema.nullable(schema.string()),
  locale: schema.string({ enum: ['ru', 'en'] }),
  is_anonymous: schema.boolean(),
  providers: schema.array(schema.string()),
  ...balanceProperties,
  avatar_url: schema.nullable(schema.string()),
}, { title: 'User' });

export const userExample: UserView = {
  id: '3f1c2a9e-8b7d-4e51-9a0c-6d2f4b8e1a73',
  email: null,
  name: null,
  locale: 'ru',
  is_anonymous: true,
  providers: [],
  balance: 100,
  plan_credits: 0,
  plan_expires_at: null,
  avatar_url: null,
};

/**
 * Sign-in methods in contract order: `email` when the account has an email and a password, then
 * linked providers in link order; `idp_c` shows the button of its last sign-in.
 */
async function providersOf(db: Knex, user: { id: string; email: string | null; password_hash: string | null }): Promise<string[]> {
  const identities = await db('identities').where({ user_id: user.id }).orderBy([{ column: 'created_at' }, { column: 'id' }]).select('provider', 'button');
  const providers = user.email && user.password_hash ? ['email'] : [];
  for (const identity of identities) {
    const value = identity.provider === 'idp_c' ? (identity.button ?? 'btn_1') : identity.provider;
    if (!providers.includes(value)) providers.push(value);
  }
  return providers;
}

export async function userView(db: Knex, storage: Storage, userId: string): Promise<UserView> {
  const user = await db('users').where({ id: userId }).first('id', 'email', 'name', 'locale', 'is_anonymous', 'avatar_key', 'password_hash');
  if (!user) throw new Error(`user ${userId} does not exist`);
  const { balance, plan_credits: planCredits, plan_expires_at: planExpiresAt } = await balanceOf(db, userId);
  return {
    id: user.id,
    email: user.email,
    name: user.name,
    locale: user.locale,
    is_anonymous: user.is_anonymous,
    providers: await providersOf(db, user),
    balance,
    plan_credits: planCredits,
    plan_expires_at: planExpiresAt,
    avatar_url: user.avatar_key ? storage.publicUrl(user.avatar_key) : null,
  };
}
