import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { findStalledDispatches } from '../../../db/generations/find-stalled-dispatches';
import { releaseDeadPollClaims } from '../../../db/generations/release-dead-poll-claims';
import { ProcessSession } from '../../../db/process-session';
import { insertGeneration } from '../../generation-fixtures';
import { databaseUrl, resetDatabase, services, silentLogger } from '../../harness';
import { untilDeadProcessesShow } from '../../service-processes';
import { makeUser } from '../../users';
import { eventually } from '../../../scripts/wait';

const alive = async (id: string) => (await services().db.raw('select process_is_alive(?) as alive', [id])).rows[0].alive as boolean;

describe('claims of a dead process', function () {
  this.timeout(30_000);
  let userId: string;
  before(() => untilDeadProcessesShow());
  beforeEach(async () => {
    await resetDatabase();
    userId = (await makeUser({ guest: true })).id;
  });

  it('a process is alive exactly while its session is open, and its session comes back after being killed', async () => {
    const session = await ProcessSession.start({ connectionString: databaseUrl() }, silentLogger());
    try {
      expect(await alive(session.id)).to.equal(true);
      expect(await alive(randomUUID())).to.equal(false);
      // Postgres restarting ends every session: the process opens its own again by itself.
      await services().db.raw("select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'effects-process ' || ?", [session.id]);
      await eventually(() => alive(session.id), (isAlive) => isAlive, 5000);
    } finally {
      await session.stop();
    }
    expect(await alive(session.id)).to.equal(false);
  });

  it('leaves no session behind when stopped while it opens its session again', async () => {
    for (const waitMs of [0, 5, 20, 50]) {
      const session = await ProcessSession.start({ connectionString: databaseUrl() }, silentLogger());
      await services().db.raw("select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'effects-process ' || ?", [session.id]);
      await new Promise((resolve) => setTimeout(resolve, waitMs));
      await session.stop();
      expect(await alive(session.id), `stopped ${waitMs} ms after the session was lost`).to.equal(false);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await alive(session.id), `300 ms after stop (${waitMs} ms)`).to.equal(false);
    }
  });

  it('a submission claim of a dead process is over at once; one of a live process only when it runs out', async () => {
    const { db, processSession } = services();
    const [dead, live, expired] = await Promise.all([1, 2, 3].map(() => insertGeneration(userId)));
    const inAMinute = db.raw("now() + interval '60 seconds'");
    await db('generations').where({ id: dead }).update({ dispatch_until: inAMinute, claimed_by: randomUUID() });
    await db('generations').where({ id: live }).update({ dispatch_until: inAMinute, claimed_by: processSession.id });
    await db('generations').where({ id: expired }).update({ dispatch_until: db.raw("now() - interval '1 second'"), claimed_by: processSession.id });
    expect((await findStalledDispatches(db, 10)).map((row) => row.id).sort()).to.deep.equal([dead, expired].sort());
  });

  it('poll claims of a dead process are due again at once; a live process keeps its own', async () => {
    const { db, processSession } = services();
    const [dead, live] = [await insertGeneration(userId, 'processing'), await insertGeneration(userId, 'processing')];
    const inHalfAMinute = db.raw("now() + interval '30 seconds'");
    await db('generations').where({ id: dead }).update({ next_poll_at: inHalfAMinute, claimed_by: randomUUID() });
    await db('generations').where({ id: live }).update({ next_poll_at: inHalfAMinute, claimed_by: processSession.id });
    expect(await releaseDeadPollClaims(db)).to.equal(1);
    const due = await db('generations').whereIn('id', [dead, live]).select('id', 'claimed_by', db.raw('next_poll_at <= now() as due'));
    expect(due.find((row) => row.id === dead)).to.include({ claimed_by: null, due: true });
    expect(due.find((row) => row.id === live)).to.include({ claimed_by: processSession.id, due: false });
  });
});
