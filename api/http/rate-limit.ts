import { createHash } from 'node:crypto';
import { isIPv4, isIPv6 } from 'node:net';
import type { Knex } from 'knex';
import type { Middleware } from 'koa';
import type { Config } from '../../config';
import { commitWithoutFlush } from '../../db/commit-without-flush';
import type { ApiContext } from './context';
import { errors } from './errors';

/**
 * Every request-rate limit of the service (the contract: lists and limits). State lives in Postgres so
 * that all web processes share it: a token bucket is one guarded upsert per hit, a failure counter one
 * upsert per wrong password. Middleware here goes into a route's `limits: [...]`, which runs after
 * authentication and before validation.
 */
type LimitMiddleware = Middleware<ApiContext['state'], ApiContext>;

export interface BucketSettings {
  /** Capacity: how many requests may come at once. */
  burst: number;
  /** Refill rate. */
  perMinute: number;
}

/**
 * The request source the auth limits count by: an IPv4 address, or the /64 network of an IPv6
 * address (one subscriber usually holds a whole /64). `ctx.ip` already is the first
 * `X-Forwarded-For` address when TRUST_PROXY is on (Koa's `app.proxy`), the socket address otherwise.
 * That header is the client's text: one that is no address counts by its hash, so the key stays
 * short (a long one would not fit the buckets' index: 500).
 */
export function requestSource(ip: string): string {
  const address = ip.split('%')[0];
  if (address.toLowerCase().startsWith('::ffff:') && isIPv4(address.slice(7))) return address.slice(7);
  if (isIPv4(address)) return address;
  if (!isIPv6(address)) return `unknown:${createHash('sha256').update(ip).digest('hex').slice(0, 32)}`;
  return `${ipv6Groups(address).slice(0, 4).map((group) => group.toString(16)).join(':')}::/64`;
}

function ipv6Groups(address: string): number[] {
  let text = address.toLowerCase();
  const embeddedIpv4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (embeddedIpv4) {
    const [a, b, c, d] = embeddedIpv4.slice(1).map(Number);
    text = `${text.slice(0, embeddedIpv4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::');
  const headGroups = head ? head.split(':') : [];
  const tailGroups = tail ? tail.split(':') : [];
  const zeros = tail === undefined ? [] : Array<string>(8 - headGroups.length - tailGroups.length).fill('0');
  return [...headGroups, ...zeros, ...tailGroups].map((group) => parseInt(group, 16));
}

/**
 * Takes one token from the bucket `key`, or answers how many seconds until one is there. The update
 * happens only when a token is available (the `where` of the upsert), so concurrent hits from several
 * processes can never take the same token twice.
 */
export async function takeToken(db: Knex, key: string, settings: BucketSettings): Promise<{ allowed: true } | { allowed: false; retryAfterS: number }> {
  const perSecond = settings.perMinute / 60;
  const refilled = 'least(:burst, b.tokens + extract(epoch from now() - b.updated_at) * :perSecond)';
  // A token taken without waiting for the disk: a crash of Postgres that loses it gives it back.
  const taken = await db.raw<{ rows: unknown[] }>(
    `insert into rate_limit_buckets as b (key, tokens, updated_at)
     select :key, :burst - 1, now() from (select ${commitWithoutFlush}) as commit_without_flush
     on conflict (key) do update set tokens = ${refilled} - 1, updated_at = now()
       where ${refilled} >= 1
     returning tokens`,
    { key, burst: settings.burst, perSecond },
  );
  if (taken.rows.length) return { allowed: true };
  const { rows } = await db.raw<{ rows: { wait: number }[] }>(
    `select (1 - ${refilled}) / :perSecond as wait from rate_limit_buckets b where key = :key`,
    { key, burst: settings.burst, perSecond },
  );
  return { allowed: false, retryAfterS: Math.max(1, Math.ceil(rows[0]?.wait ?? 1)) };
}

async function limitBy(ctx: ApiContext, key: string, settings: BucketSettings): Promise<void> {
  const result = await takeToken(ctx.services.db, key, settings);
  if (!result.allowed) throw errors.rateLimited(result.retryAfterS);
}

/** The auth operations that each have their own bucket per request source. */
export type AuthOperation =
  | 'anonymous' | 'register' | 'login' | 'refresh' | 'change-password' | 'idp_a' | 'idp_b' | 'idp_c' | 'idp_d';

/** Auth endpoints: a bucket per operation per request source; excess is `429 rate_limited` with `Retry-After`. */
export function operationLimit(operation: AuthOperation): LimitMiddleware {
  return async (ctx, next) => {
    await limitBy(ctx, `auth:${operation}:${requestSource(ctx.ip)}`, ctx.services.config.rateLimits.auth);
    await next();
  };
}

function userBudget(name: 'write' | 'read' | 'voice', settings: (config: Config) => BucketSettings): () => LimitMiddleware {
  return () => async (ctx, next) => {
    // Budgets are per user; a route without a caller falls back to the request source.
    const who = ctx.state.user ? `user:${ctx.state.user.id}` : `source:${requestSource(ctx.ip)}`;
    await limitBy(ctx, `${name}:${who}`, settings(ctx.services.config));
    await next();
  };
}

/** The per-user budget of writes (`POST /generations`, `/uploads`, `/devices`, `/payments`, ...). */
export const writeBudget = userBudget('write', (config) => config.rateLimits.write);

/** The one shared per-user budget of reads under a token (`/me`, `/credits/*`, `/generations`, `/referral`, ...). */
export const readBudget = userBudget('read', (config) => config.rateLimits.read);

/** Voice input's own per-user budget, narrower than the writes' (the contract: lists and limits). */
export const voiceBudget = userBudget('voice', (config) => config.rateLimits.voice);

type LoginSettings = Config['rateLimits'];

const lockKey = (email: string, source: string) => `lock:${email.toLowerCase()}:${source}`;
const guardKey = (email: string) => `guard:${email.toLowerCase()}`;

/** Seconds left of a running lock on `key`, or null. */
async function lockedFor(db: Knex, key: string): Promise<number | null> {
  const row = await db('login_failures')
    .where({ key })
    .andWhere('locked_until', '>', db.fn.now())
    .first(db.raw('ceil(extract(epoch from locked_until - now()))::integer as wait'));
  return row ? Math.max(1, row.wait) : null;
}

/**
 * Counts one failure on `key` in a window of `windowS`; the failure that reaches `threshold` starts
 * a lock of `lockS` and a new count. The second statement is guarded by the count, so when two
 * failures reach the threshold together only one of them sets the lock.
 */
async function countFailure(db: Knex, key: string, threshold: number, windowS: number, lockS: number): Promise<void> {
  const inWindow = "f.window_started_at > now() - :windowS * interval '1 second'";
  await db.raw(
    `insert into login_failures as f (key, failures, window_started_at) values (:key, 1, now())
     on conflict (key) do update set
       failures = case when ${inWindow} then f.failures + 1 else 1 end,
       window_started_at = case when ${inWindow} then f.window_started_at else now() end`,
    { key, windowS },
  );
  await db.raw(
    `update login_failures set locked_until = now() + :lockS * interval '1 second', failures = 0, window_started_at = now()
     where key = :key and failures >= :threshold`,
    { key, lockS, threshold },
  );
}

/**
 * Before a password is checked: `429` while the (email, source) pair is locked, and while the account
 * is under distributed guessing unless the request comes from a device that signed in to it before.
 * Both answers come before the password is verified, so a locked-out guesser learns nothing.
 */
export async function checkLoginAllowed(
  db: Knex,
  attempt: { email: string; source: string; isTrustedDevice: () => Promise<boolean> },
): Promise<void> {
  const locked = await lockedFor(db, lockKey(attempt.email, attempt.source));
  if (locked !== null) throw errors.rateLimited(locked);
  const guarded = await lockedFor(db, guardKey(attempt.email));
  if (guarded !== null && !(await attempt.isTrustedDevice())) throw errors.rateLimited(guarded);
}

/**
 * After a wrong password: counts it for the (email, source) lock and for the account-wide guard.
 * One source is locked out after `loginLock.failures`, so reaching `loginGuard.failures` (a larger
 * number) takes guesses from several sources: that is what switches the guard on.
 */
export async function recordLoginFailure(db: Knex, settings: LoginSettings, attempt: { email: string; source: string }): Promise<void> {
  const { loginLock, loginGuard } = settings;
  await countFailure(db, lockKey(attempt.email, attempt.source), loginLock.failures, loginLock.windowS, loginLock.lockS);
  await countFailure(db, guardKey(attempt.email), loginGuard.failures, loginGuard.windowS, loginGuard.guardS);
}

const operatorKey = (source: string) => `ops:${source}`;

/**
 * The operator console (`/ops`): a request source that sent wrong credentials `loginLock.failures`
 * times within the window is refused (`429`) for `loginLock.lockS`, before its credentials are
 * compared, so a locked-out guesser learns nothing; the window runs out by itself.
 */
export async function checkOperatorAllowed(db: Knex, source: string): Promise<void> {
  const locked = await lockedFor(db, operatorKey(source));
  if (locked !== null) throw errors.rateLimited(locked);
}

export async function recordOperatorFailure(db: Knex, settings: LoginSettings, source: string): Promise<void> {
  const { failures, windowS, lockS } = settings.loginLock;
  await countFailure(db, operatorKey(source), failures, windowS, lockS);
}

/** After a correct password: the series of this (email, source) is over. The guard keeps running. */
export async function clearLoginFailures(db: Knex, attempt: { email: string; source: string }): Promise<void> {
  await db('login_failures').where({ key: lockKey(attempt.email, attempt.source) }).delete();
}
