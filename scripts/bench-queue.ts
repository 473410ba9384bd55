import http from 'node:http';
import { signAccessToken } from '../api/tokens/access-token';
import { syncProviderAccounts } from '../pool/accounts';
import type { Services } from '../services';
import type { ScratchStack } from '../process/scratch-stack';
import { startService } from './bench-processes';
import { runBench } from './bench-runner';
import { compareLoads, formatLoad, runLoops, send, withServerCpu } from './load';

/**
 * `node dist/scripts/bench-queue.js [--waiting 10000]`: `GET /v1/generations/{id}` of a pending
 * generation with 10,000 others waiting ahead of it (its `queue_position` is 10,001, counted on
 * each request; `estimated_wait_s` from the pool's pace), beside the same request for a succeeded
 * generation (signed result and preview links, no queue figures), in one `web` process, in
 * alternating rounds. The ratio is the cost of the queue position.
 */
const waiting = Number(process.argv[process.argv.indexOf('--waiting') + 1]) || 10_000;
const tokenSecret = 'bench-token-secret-that-is-long-enough-0123456789';

async function seed({ db }: Services): Promise<{ token: string; pending: string; succeeded: string }> {
  await syncProviderAccounts(db, [{ kind: 'simulator', apiKey: 'bench-account', slots: 8 }]);
  // Every slot busy, so the line waits, as under load.
  const [effect] = await db('effects').insert({
    slug: `bench-queue-${Date.now()}`, name_ru: 'bench', name_en: 'bench', poster_key: 'catalog/bench.jpg',
    cost: 10, characters: JSON.stringify([{ min_photos: 1, max_photos: 1 }]), output_type: 'image', model: 'image',
  }).returning('id');
  const [others] = await db('users').insert({ is_anonymous: true }).returning('id');
  const [me] = await db('users').insert({ is_anonymous: true }).returning('id');
  const row = (user: string) => `gen_random_uuid(), '${user}', 'effect', '${effect.id}', 10, 'image', 'image', '[]'`;
  await db.raw(`insert into generations (id, user_id, kind, effect_id, cost, output_type, model, inputs, status, created_at)
    select ${row(others.id)}, 'pending', now() - interval '1 hour' + n * interval '1 millisecond' from generate_series(1, :waiting) n`, { waiting });
  // A hundred finished in the last minutes: the pace the estimate divides by.
  await db.raw(`insert into generations (id, user_id, kind, effect_id, cost, output_type, model, inputs, status, error_code, created_at, started_at, finished_at)
    select ${row(others.id)}, 'failed', 'provider_error', now() - interval '4 minutes', now() - interval '3 minutes', now() - n * interval '1 second' from generate_series(1, 100) n`);
  const [pending] = await db.raw(`insert into generations (id, user_id, kind, effect_id, cost, output_type, model, inputs, status)
    select ${row(me.id)}, 'pending' returning id`).then((result: { rows: { id: string }[] }) => result.rows);
  const preview = JSON.stringify({ thumb_key: `previews/${me.id}/x/thumb.webp`, poster_key: null, width: 512, height: 512, blurhash: 'LEHV6nWB2yk8pyo0adR*.7kCMdnj' });
  const [succeeded] = await db.raw(`insert into generations (id, user_id, kind, effect_id, cost, output_type, model, inputs, status, result_key, result_stored_at, preview, started_at, finished_at)
    select ${row(me.id)}, 'succeeded', 'results/${me.id}/x.jpg', now(), '${preview}', now(), now() returning id`).then((result: { rows: { id: string }[] }) => result.rows);
  await db.raw(`update provider_slots set generation_id = (select id from generations where status = 'pending' limit 1), lease_expires_at = now() + interval '1 hour'`);
  await db.raw('vacuum analyze generations');
  return { token: await signAccessToken(tokenSecret, me.id, 3600), pending: pending.id, succeeded: succeeded.id };
}

async function main(stack: ScratchStack): Promise<void> {
  const { token, pending, succeeded } = await seed(stack.services);
  const web = await startService(['web'], stack.serviceEnv({ TOKEN_SECRET: tokenSecret, RATE_READ_BURST: '100000000', RATE_READ_PER_MINUTE: '100000000' }));
  try {
    const headers = { authorization: `Bearer ${token}` };
    const probe = JSON.parse((await send(new http.Agent(), web.url, { path: `/v1/generations/${pending}`, headers })).body);
    if (probe.queue_position !== waiting + 1) throw new Error(`bench: queue_position ${probe.queue_position}, expected ${waiting + 1}`);
    const load = (id: string) => () => withServerCpu(web.child.pid!, () =>
      runLoops(async (_, agent) => (await send(agent, web.url, { path: `/v1/generations/${id}`, headers })).status === 200, { concurrency: 8, durationMs: 3000 }));
    const { baseline, subject, ratio } = await compareLoads(load(succeeded), load(pending));
    console.log(`\n## GET /v1/generations/{id}: pending with ${waiting.toLocaleString('en')} waiting ahead vs succeeded (concurrency 8)`);
    console.log(`queue figures of the pending one: queue_position ${probe.queue_position}, estimated_wait_s ${probe.estimated_wait_s}`);
    console.log(`${formatLoad('succeeded (signed result and preview links)', baseline)}   server CPU ${baseline.serverCpuUsPerRequest} us/request`);
    console.log(`${formatLoad(`pending, queue position ${waiting + 1}`, subject)}   server CPU ${subject.serverCpuUsPerRequest} us/request`);
    console.log(`pending throughput: ${(ratio * 100).toFixed(1)}% of succeeded; p50 ${(subject.p50Ms / Math.max(0.01, baseline.p50Ms)).toFixed(2)}x`);
  } finally {
    await web.stop();
  }
}

if (require.main === module) runBench(main);
