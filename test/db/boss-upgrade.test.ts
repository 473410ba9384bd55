import { expect } from 'chai';
import pg from 'pg';
import PgBoss10 from 'pg-boss-10';
import type { PgBoss } from 'pg-boss';
import { bossSchema, startBoss } from '../../db/boss';
import { firstSupportedSchemaVersion, legacySchema, legacySubmitQueue } from '../../db/boss-upgrade';
import { submitQueueOf } from '../../db/queues';
import { databaseUrl, services } from '../harness';

/** A database of its own on the test server, so the shared pg-boss schema is not touched. */
async function freshDatabase(name: string): Promise<{ url: string; drop(): Promise<void> }> {
  const admin = new pg.Client({ connectionString: databaseUrl() });
  await admin.connect();
  await admin.query(`drop database if exists "${name}" with (force)`);
  await admin.query(`create database "${name}"`);
  await admin.end();
  const url = new URL(databaseUrl());
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: databaseUrl() });
      await client.connect();
      await client.query(`drop database if exists "${name}" with (force)`);
      await client.end();
    },
  };
}

/** The unfinished tickets of the simulator's line as pg-boss answers them, oldest first. */
async function ticketsOf(boss: PgBoss) {
  const jobs = await boss.findJobs(submitQueueOf('simulator'));
  return jobs.filter((job) => !['completed', 'cancelled', 'failed'].includes(job.state))
    .sort((one, other) => one.createdOn.getTime() - other.createdOn.getTime() || one.id.localeCompare(other.id));
}

interface JobRow { id: string; name: string; state: string; retry_count: number; created_on: Date }

async function unfinishedJobs(url: string, schema: string): Promise<JobRow[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(`select id, name, state::text, retry_count, created_on from ${schema}.job where state < 'completed' order by created_on, id`);
    return rows;
  } finally {
    await client.end();
  }
}

describe('a pg-boss 10 schema left in an existing database', function () {
  this.timeout(60_000);
  let database: { url: string; drop(): Promise<void> };
  let before10: JobRow[];
  let boss: PgBoss | null = null;
  const ids = {
    waiting: '00000000-0000-4000-8000-000000000001',
    retried: '00000000-0000-4000-8000-000000000002',
    active: '00000000-0000-4000-8000-000000000003',
    done: '00000000-0000-4000-8000-000000000004',
  };

  before(async () => {
    database = await freshDatabase(`boss_upgrade_${process.pid}`);
    const old = new PgBoss10({ connectionString: database.url, schema: bossSchema, supervise: false, schedule: false });
    await old.start();
    await old.createQueue('generation-submit');
    await old.createQueue('push-send');
    const send = (id: string, options: object = {}) => old.send('generation-submit', { generationId: id }, { id, retryLimit: 1_000_000, ...options });
    await send(ids.waiting);
    await send(ids.retried);
    await send(ids.active);
    await send(ids.done);
    await old.send('bench-noop', { orphan: true }).catch(() => undefined); // a queue the new schema does not have
    // Every ticket handed to a worker; one put back in line twice, one finished, one held by a worker that then stopped.
    await old.fetch('generation-submit', { batchSize: 4 });
    await old.fail('generation-submit', ids.retried);
    await old.fetch('generation-submit', { batchSize: 4 });
    await old.fail('generation-submit', [ids.retried, ids.waiting]);
    await old.complete('generation-submit', ids.done);
    before10 = await unfinishedJobs(database.url, bossSchema);
    await old.stop({ graceful: false, wait: true });
  });

  after(async function () {
    // DROP DATABASE waits for a checkpoint, which takes a minute or more on a disk busy with other runs.
    this.timeout(300_000);
    await boss?.stop({ graceful: false });
    await database.drop();
  });

  it('starts with a real pg-boss 10 (schema 24) holding waiting, retried and active jobs', async () => {
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    const { rows } = await client.query(`select version from ${bossSchema}.version`);
    await client.end();
    expect(rows[0].version).to.be.below(firstSupportedSchemaVersion);
    expect(before10.map((job) => [job.id, job.state])).to.deep.equal([
      [ids.waiting, 'retry'], [ids.retried, 'retry'], [ids.active, 'active'],
    ]);
    // pg-boss 10 counts a retry when the job is fetched again.
    expect(before10.map((job) => job.retry_count)).to.deep.equal([0, 1, 0]);
  });

  it('is upgraded at start: each unfinished job keeps its id, created_on and retry count, in the simulator\'s line; active ones go back to retry', async () => {
    boss = await startBoss(database.url, { supervise: false, schedule: false }, services().log);
    expect(await boss.schemaVersion()).to.be.at.least(firstSupportedSchemaVersion);
    const after12 = await ticketsOf(boss);
    expect(after12.map((job) => [job.id, job.name, job.state, job.retryCount, job.createdOn.toISOString()])).to.deep.equal(
      before10.map((job) => [job.id, submitQueueOf('simulator'), 'retry', job.retry_count, job.created_on.toISOString()]),
    );
  });

  it('drops the legacy schema, and hands the jobs out in their old line order', async () => {
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    const { rows } = await client.query('select nspname from pg_namespace where nspname = $1', [legacySchema]);
    await client.end();
    expect(rows).to.have.length(0);
    const fetched = await boss!.fetch<{ generationId: string }>(submitQueueOf('simulator'), { batchSize: 10 });
    expect(fetched.map((job) => job.id)).to.deep.equal([ids.waiting, ids.retried, ids.active]);
  });

  it('a second start finds nothing to upgrade and changes nothing', async () => {
    const again = await startBoss(database.url, { supervise: false, schedule: false }, services().log);
    try {
      const jobs = await ticketsOf(again);
      expect(jobs.map((job) => job.id)).to.deep.equal([ids.waiting, ids.retried, ids.active]);
    } finally {
      await again.stop({ graceful: false });
    }
  });
});

describe('the one generation-submit line of a pg-boss 12 schema from before provider kinds', function () {
  this.timeout(60_000);
  let database: { url: string; drop(): Promise<void> };

  before(async () => {
    database = await freshDatabase(`boss_legacy_line_${process.pid}`);
  });

  after(async function () {
    this.timeout(300_000);
    await database.drop();
  });

  it('moves its waiting tickets to the simulator\'s line at start, keeping their ids and order, once', async () => {
    const first = await startBoss(database.url, { supervise: false, schedule: false }, services().log);
    const ids = ['00000000-0000-4000-8000-00000000000a', '00000000-0000-4000-8000-00000000000b', '00000000-0000-4000-8000-00000000000c'];
    try {
      await first.createQueue(legacySubmitQueue);
      for (const id of ids) await first.send(legacySubmitQueue, { generationId: id }, { id, retryLimit: 1_000_000 });
      // The oldest was handed to a dispatcher and put back in line: it keeps its place.
      await first.fetch(legacySubmitQueue, { batchSize: 1 });
      await first.fail(legacySubmitQueue, ids[0]);
    } finally {
      await first.stop({ graceful: false });
    }
    for (let start = 0; start < 2; start += 1) {
      const boss = await startBoss(database.url, { supervise: false, schedule: false }, services().log);
      try {
        expect(await boss.findJobs(legacySubmitQueue, { queued: true })).to.deep.equal([]);
        expect((await ticketsOf(boss)).map((job) => [job.id, job.data])).to.have.deep.members(ids.map((id) => [id, { generationId: id }]));
        if (start === 1) {
          const fetched = await boss.fetch(submitQueueOf('simulator'), { batchSize: 10 });
          expect(fetched.map((job) => job.id)).to.deep.equal(ids);
        }
      } finally {
        await boss.stop({ graceful: false });
      }
    }
  });
});
