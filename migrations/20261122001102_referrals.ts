import type { Knex } from 'knex';

/**
 * Referral codes and links. Every account has its code from creation (a column default, so any
 * insert gets one). A link keeps counting for the inviter after the invited account is deleted.
 */
export async function up(knex: Knex): Promise<void> {
  // 8 characters from an alphabet without look-alikes (no 0/O, 1/I/L); retried until unused.
  await knex.raw(`
    create function new_referral_code() returns text language plpgsql volatile as $$
    declare
      alphabet constant text := 'ABCDEFGHJKMNPQRSTUVWXYZ23456789';
      code text;
    begin
      loop
        select string_agg(substr(alphabet, 1 + (get_byte(bytes, i) % length(alphabet)), 1), '')
          into code
          from (select gen_random_bytes(8) as bytes) random, generate_series(0, 7) as i;
        exit when not exists (select 1 from users where referral_code = code);
      end loop;
      return code;
    end
    $$`);
  // Added empty, filled, then constrained: existing accounts get a code too.
  await knex.raw('alter table users add column referral_code text unique');
  await knex.raw('update users set referral_code = new_referral_code()');
  await knex.raw('alter table users alter column referral_code set default new_referral_code(), alter column referral_code set not null');

  await knex.raw(`
    create table referrals (
      id uuid primary key default gen_random_uuid(),
      inviter_id uuid not null references users (id) on delete cascade,
      -- Unique: a recorded inviter is never replaced. Null once the invited account is deleted.
      invited_id uuid unique references users (id) on delete set null,
      -- When the invited user became a full account: only then does the link count as "invited".
      registered_at timestamptz,
      -- When both bonuses were paid; stays null when the same-device rule withheld them.
      paid_at timestamptz,
      created_at timestamptz not null default now()
    )`);
  await knex.raw('create index referrals_by_inviter on referrals (inviter_id)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('referrals');
  await knex.raw('alter table users drop column referral_code');
  await knex.raw('drop function new_referral_code()');
}
