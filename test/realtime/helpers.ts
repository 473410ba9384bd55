import { randomUUID } from 'node:crypto';
import { signAccessToken } from '../../api/tokens/access-token';
import { services } from '../harness';

export async function newUser(options: { locale?: string; isAnonymous?: boolean } = {}): Promise<{ id: string; token: string }> {
  const { db, config } = services();
  const [row] = await db('users').insert({ is_anonymous: options.isAnonymous ?? false, locale: options.locale ?? 'ru' }).returning('id');
  return { id: row.id, token: await signAccessToken(config.tokenSecret, row.id, 600) };
}

/** A generation row as the pipeline would have written it. */
export async function insertGeneration(userId: string, status: 'pending' | 'processing' | 'succeeded' | 'failed' = 'pending', errorCode: string | null = null): Promise<string> {
  const id = randomUUID();
  await services().db('generations').insert({
    id,
    user_id: userId,
    effect_id: randomUUID(),
    status,
    cost: 10,
    output_type: 'image',
    model: 'image',
    inputs: JSON.stringify([]),
    error_code: status === 'failed' ? (errorCode ?? 'provider_error') : null,
    started_at: status === 'pending' ? null : new Date(),
    finished_at: status === 'succeeded' || status === 'failed' ? new Date() : null,
  });
  return id;
}

/** A status change the way the pipeline makes it: the update and its NOTIFY in one transaction. */
export async function changeStatus(id: string, status: 'processing' | 'succeeded' | 'failed', errorCode: string | null = null): Promise<void> {
  await services().db.transaction(async (trx) => {
    const [row] = await trx('generations').where({ id }).update({
      status,
      error_code: status === 'failed' ? (errorCode ?? 'provider_error') : null,
      finished_at: status === 'processing' ? null : trx.fn.now(),
      started_at: trx.raw('coalesce(started_at, now())'),
    }).returning(['id', 'user_id', 'status', 'error_code']);
    await trx.raw("select pg_notify('generation_status', ?)", [JSON.stringify(row)]);
  });
}

export async function leaseCount(userId?: string): Promise<number> {
  const query = services().db('stream_leases');
  if (userId) query.where({ user_id: userId });
  const [{ count }] = await query.count({ count: '*' });
  return Number(count);
}

export async function eventually<T>(probe: () => Promise<T>, accept: (value: T) => boolean, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (accept(value)) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms; last value ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
