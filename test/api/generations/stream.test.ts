import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { queryObjects } from 'node:v8';
import { startWeb } from '../../../api/web';
import { openSse, type SseConnection } from '../../../scripts/loadtest/sse-client';
import { changeStatus, insertGeneration } from '../../generation-fixtures';
import { capturingLogger, resetDatabase, services, testConfig, startTestApp, type TestApp } from '../../harness';
import { makeUser } from '../../users';
import { eventually } from '../../../scripts/wait';
import { renewStreamProcess } from '../../../api/realtime/stream-leases';

/** Stream slots held in `stream_leases` (of one user, or all). */
async function leaseCount(userId?: string): Promise<number> {
  const query = services().db('stream_leases');
  if (userId) query.where({ user_id: userId });
  const [{ count }] = await query.count({ count: '*' });
  return Number(count);
}

const streamPath = (id: string) => `/v1/generations/${id}/stream`;

describe('GET /v1/generations/{id}/stream', function () {
  this.timeout(30_000);
  let app: TestApp;
  const open: SseConnection[] = [];

  async function stream(token: string, id: string, on: TestApp = app): Promise<SseConnection> {
    const connection = await openSse(on.url, streamPath(id), token);
    open.push(connection);
    return connection;
  }

  before(async () => {
    app = await startTestApp();
  });
  after(() => app.close());
  beforeEach(() => resetDatabase());
  afterEach(async () => {
    for (const connection of open.splice(0)) connection.destroy();
    // Every stream of a test is gone before the next one starts.
    await eventually(() => leaseCount(), (count) => count === 0);
  });

  it('starts with a snapshot of the current state, as `event: status` {id, status, error_code}', async () => {
    const user = await makeUser();
    const id = await insertGeneration(user.id, 'processing');
    const connection = await stream(user.token, id);
    expect(connection.status).to.equal(200);
    expect(connection.headers['content-type']).to.match(/^text\/event-stream/);
    expect(connection.headers['x-request-id']).to.be.a('string');
    const first = await connection.next();
    expect(first.event).to.equal('status');
    expect(JSON.parse(first.data)).to.deep.equal({ id, status: 'processing', error_code: null });
  });

  it('sends one event per change and closes at succeeded', async () => {
    const user = await makeUser();
    const id = await insertGeneration(user.id, 'pending');
    const connection = await stream(user.token, id);
    expect(JSON.parse((await connection.next()).data).status).to.equal('pending');
    await changeStatus(id, 'processing');
    expect(JSON.parse((await connection.next()).data).status).to.equal('processing');
    await changeStatus(id, 'succeeded');
    expect(JSON.parse((await connection.next()).data)).to.deep.equal({ id, status: 'succeeded', error_code: null });
    expect(await connection.endsWithin(2000)).to.equal(true);
    expect(connection.events).to.have.length(3);
    expect(await leaseCount(user.id)).to.equal(0);
  });

  it('closes at failed with the error code (an early failure straight from pending)', async () => {
    const user = await makeUser();
    const id = await insertGeneration(user.id, 'pending');
    const connection = await stream(user.token, id);
    await connection.next();
    await changeStatus(id, 'failed', 'bad_input_image');
    expect(JSON.parse((await connection.next()).data)).to.deep.equal({ id, status: 'failed', error_code: 'bad_input_image' });
    expect(await connection.endsWithin(2000)).to.equal(true);
  });

  it('shows a terminal status as its announcement says it, and rereads the row for any other', async () => {
    const user = await makeUser();
    const announce = (id: string, status: string, errorCode: string | null) =>
      services().db.raw("select pg_notify('generation_status', ?)", [JSON.stringify({ id, user_id: user.id, status, error_code: errorCode })]);
    // The rows stay pending: what the streams show of them comes from the announcements or the rows.
    const reread = await insertGeneration(user.id, 'pending');
    const rereading = await stream(user.token, reread);
    await rereading.next();
    await announce(reread, 'processing', null);
    expect(await rereading.endsWithin(500)).to.equal(false);
    expect(rereading.events).to.have.length(1);

    const failed = await insertGeneration(user.id, 'pending');
    const failing = await stream(user.token, failed);
    await failing.next();
    await announce(failed, 'failed', 'provider_error');
    expect(JSON.parse((await failing.next()).data)).to.deep.equal({ id: failed, status: 'failed', error_code: 'provider_error' });
    expect(await failing.endsWithin(2000)).to.equal(true);
    expect(await leaseCount(user.id)).to.equal(1);
  });

  it('answers a terminal generation with one snapshot, then closes', async () => {
    const user = await makeUser();
    const id = await insertGeneration(user.id, 'failed', 'safety');
    const connection = await stream(user.token, id);
    expect(connection.status).to.equal(200);
    expect(await connection.endsWithin(2000)).to.equal(true);
    expect(connection.events.map((event) => JSON.parse(event.data))).to.deep.equal([{ id, status: 'failed', error_code: 'safety' }]);
    expect(await leaseCount(user.id)).to.equal(0);
  });

  it('gives a reconnecting client a fresh snapshot', async () => {
    const user = await makeUser();
    const id = await insertGeneration(user.id, 'pending');
    const first = await stream(user.token, id);
    await first.next();
    first.destroy();
    await changeStatus(id, 'processing');
    const second = await stream(user.token, id);
    expect(JSON.parse((await second.next()).data).status).to.equal('processing');
  });

  it('answers 404 for an absent generation, another user\'s, and an id that is not a UUID', async () => {
    const owner = await makeUser();
    const stranger = await makeUser();
    const id = await insertGeneration(owner.id, 'pending');
    for (const [token, path] of [[owner.token, randomUUID()], [stranger.token, id], [owner.token, 'not-a-uuid']]) {
      const connection = await stream(token, path);
      await connection.ended;
      expect(connection.status).to.equal(404);
      expect((connection.body as any).error.code).to.equal('not_found');
    }
    expect(await leaseCount()).to.equal(0);
  });

  it('answers 401 without a token', async () => {
    const user = await makeUser();
    const id = await insertGeneration(user.id, 'pending');
    const connection = await stream('not-a-valid-token', id);
    await connection.ended;
    expect(connection.status).to.equal(401);
    expect((connection.body as any).error.code).to.equal('auth_required');
  });

  it('a refused open (404) takes no slot and leaves the open streams of the process working', async () => {
    const user = await makeUser();
    const id = await insertGeneration(user.id, 'pending');
    const kept = await stream(user.token, id);
    await kept.next();
    const refused = await stream(user.token, randomUUID());
    await refused.ended;
    expect(refused.status).to.equal(404);
    await changeStatus(id, 'processing');
    expect(JSON.parse((await kept.next()).data).status).to.equal('processing');
    expect(app.realtime.openStreams).to.equal(1);
  });

  it('frees the slot and the subscription when the client drops the connection abruptly', async () => {
    const user = await makeUser();
    const ids = await Promise.all([1, 2, 3].map(() => insertGeneration(user.id, 'processing')));
    const connections = await Promise.all(ids.map((id) => stream(user.token, id)));
    await Promise.all(connections.map((connection) => connection.next()));
    expect(await leaseCount(user.id)).to.equal(3);
    for (const connection of connections) connection.destroy();
    await eventually(() => leaseCount(user.id), (count) => count === 0, 3000);
    expect(app.realtime.openStreams).to.equal(0);
  });

  it('records the stream request in the request log with its route and status', async () => {
    const captured = capturingLogger();
    const logged = await startTestApp({ log: captured.log });
    try {
      const user = await makeUser();
      const id = await insertGeneration(user.id, 'processing');
      const connection = await stream(user.token, id, logged);
      await connection.next();
      const line = await eventually(
        async () => captured.lines().find((entry) => entry.msg === 'request' && entry.route === '/v1/generations/{id}/stream'),
        (entry) => entry !== undefined,
      );
      expect(line).to.include({ method: 'GET', status: 200 });
      connection.destroy();
    } finally {
      await logged.close();
    }
  });

  it('keeps no Koa request context alive while its stream is open', async () => {
    // Every request's context has Koa's context module in its prototype chain.
    const koaContext = createRequire(__filename)('koa/lib/context') as object;
    const Context = function () {} as unknown as new () => object;
    Context.prototype = koaContext;
    // Two users: ten streams are above one user's cap.
    const users = [await makeUser(), await makeUser()];
    const opens = await Promise.all(Array.from({ length: 10 }, async (_, index) => {
      const user = users[index % 2];
      return { user, id: await insertGeneration(user.id, 'processing') };
    }));
    const before = queryObjects(Context, { format: 'count' });
    const connections = await Promise.all(opens.map(({ user, id }) => stream(user.token, id)));
    await Promise.all(connections.map((connection) => connection.next()));
    const after = queryObjects(Context, { format: 'count' });
    expect(after - before).to.be.below(3);
    expect(app.realtime.openStreams).to.equal(10);
  });

  it('sends `: ping` heartbeats and renews the slot with them (its process\'s one row)', async () => {
    const fast = await startTestApp({ config: { STREAM_HEARTBEAT_S: '1', STREAM_LEASE_S: '3' } });
    try {
      const user = await makeUser();
      const id = await insertGeneration(user.id, 'processing');
      const connection = await stream(user.token, id, fast);
      await connection.next();
      const processRow = () => services().db('stream_processes').where({ id: fast.realtime.processId }).first('expires_at');
      const { expires_at: before } = await processRow();
      await eventually(async () => connection.comments, (comments) => comments >= 2, 4000);
      const { expires_at: after } = await processRow();
      expect(after.getTime()).to.be.greaterThan(before.getTime());
      expect(await leaseCount(user.id)).to.equal(1);
      expect(connection.isEnded).to.equal(false);
      connection.destroy();
    } finally {
      await fast.close();
    }
  });

  describe('the per-user cap of open streams', () => {
    let second: TestApp;
    before(async () => {
      second = await startTestApp();
    });
    after(() => second.close());

    it('holds across two web processes: the sixth stream is 429 too_many_streams on either', async () => {
      const user = await makeUser();
      const ids = await Promise.all([1, 2, 3, 4, 5, 6].map(() => insertGeneration(user.id, 'processing')));
      expect(app.realtime.processId).not.to.equal(second.realtime.processId);
      const onFirst = await Promise.all(ids.slice(0, 3).map((id) => stream(user.token, id)));
      const onSecond = await Promise.all(ids.slice(3, 5).map((id) => stream(user.token, id, second)));
      for (const connection of [...onFirst, ...onSecond]) expect(connection.status).to.equal(200);

      for (const target of [app, second]) {
        const refused = await stream(user.token, ids[5], target);
        await refused.ended;
        expect(refused.status).to.equal(429);
        expect((refused.body as any).error.code).to.equal('too_many_streams');
      }
      // Another user is not affected.
      const other = await makeUser();
      const otherStream = await stream(other.token, await insertGeneration(other.id, 'processing'), second);
      expect(otherStream.status).to.equal(200);

      // A closed stream gives its slot back at once.
      onSecond[0].destroy();
      await eventually(() => leaseCount(user.id), (count) => count === 4);
      const admitted = await stream(user.token, ids[5], app);
      expect(admitted.status).to.equal(200);
    });

    it('admits concurrent opens up to the cap and no further', async () => {
      const user = await makeUser();
      const ids = await Promise.all(Array.from({ length: 8 }, () => insertGeneration(user.id, 'processing')));
      const connections = await Promise.all(ids.map((id, index) => stream(user.token, id, index % 2 ? app : second)));
      const statuses = connections.map((connection) => connection.status).sort();
      expect(statuses).to.deep.equal([200, 200, 200, 200, 200, 429, 429, 429]);
      expect(await leaseCount(user.id)).to.equal(5);
    });

    it('does not count the leases of a process that died (its row lapsed), and drops them a minute later', async () => {
      const user = await makeUser();
      const deadProcess = randomUUID();
      const { db } = services();
      await db('stream_processes').insert({ id: deadProcess, expires_at: new Date(Date.now() - 1000) });
      await db('stream_leases').insert(Array.from({ length: 5 }, () => ({
        id: randomUUID(), user_id: user.id, process_id: deadProcess, kind: 'generation', object_id: randomUUID(),
      })));
      const ids = await Promise.all([1, 2, 3, 4, 5].map(() => insertGeneration(user.id, 'processing')));
      const connections = await Promise.all(ids.map((id) => stream(user.token, id)));
      expect(connections.map((connection) => connection.status)).to.deep.equal([200, 200, 200, 200, 200]);
      const deadLeases = async () => (await db('stream_leases').where({ process_id: deadProcess })).length;
      expect(await deadLeases()).to.equal(5);

      await db('stream_processes').where({ id: deadProcess }).update({ expires_at: new Date(Date.now() - 61_000) });
      await renewStreamProcess(db, app.realtime.processId, 45);
      expect(await deadLeases()).to.equal(0);
      expect(await db('stream_processes').where({ id: deadProcess })).to.deep.equal([]);
      expect(await leaseCount(user.id)).to.equal(5);
    });

    it('the renewal deletes the slots whose release failed, and only those', async () => {
      const user = await makeUser();
      const { db } = services();
      const processId = randomUUID();
      const [failed, held] = [randomUUID(), randomUUID()];
      await db('stream_leases').insert([failed, held].map((id) => ({
        id, user_id: user.id, process_id: processId, kind: 'generation', object_id: randomUUID(),
      })));
      await renewStreamProcess(db, processId, 45, [failed]);
      expect((await db('stream_leases').where({ process_id: processId })).map((row) => row.id)).to.deep.equal([held]);
      await db('stream_leases').where({ process_id: processId }).delete();
      await db('stream_processes').where({ id: processId }).delete();
    });

    it('reads the cap from STREAM_CAP_PER_USER', async () => {
      const capped = await startTestApp({ config: { STREAM_CAP_PER_USER: '1' } });
      try {
        const user = await makeUser();
        const [a, b] = await Promise.all([1, 2].map(() => insertGeneration(user.id, 'processing')));
        expect((await stream(user.token, a, capped)).status).to.equal(200);
        const refused = await stream(user.token, b, capped);
        expect(refused.status).to.equal(429);
      } finally {
        for (const connection of open.splice(0)) connection.destroy();
        await capped.close();
      }
    });
  });

  describe('when the LISTEN connection is lost', () => {
    it('reconnects, sends every open stream a fresh snapshot, and keeps delivering changes', async () => {
      const user = await makeUser();
      const id = await insertGeneration(user.id, 'processing');
      const connection = await stream(user.token, id);
      await connection.next();
      const pid = app.realtime.listenBackendPid();
      expect(pid).to.be.a('number');
      await services().db.raw('select pg_terminate_backend(?, 5000)', [pid]);

      // Nothing changed, but notifications may have been missed: the snapshot comes again.
      const resent = await connection.next(5000);
      expect(JSON.parse(resent.data)).to.deep.equal({ id, status: 'processing', error_code: null });
      expect(app.realtime.listenBackendPid()).to.be.a('number').and.not.equal(pid);

      await changeStatus(id, 'succeeded');
      expect(JSON.parse((await connection.next()).data).status).to.equal('succeeded');
      expect(await connection.endsWithin(2000)).to.equal(true);
    });

    it('does not miss a terminal status committed while it was away', async () => {
      const user = await makeUser();
      const id = await insertGeneration(user.id, 'processing');
      const connection = await stream(user.token, id);
      await connection.next();
      // Terminated and waited for: the change below is committed while nobody listens.
      await services().db.raw('select pg_terminate_backend(?, 5000)', [app.realtime.listenBackendPid()]);
      await changeStatus(id, 'failed', 'provider_timeout');
      expect(await connection.endsWithin(5000)).to.equal(true);
      expect(JSON.parse(connection.events.at(-1)!.data)).to.deep.equal({ id, status: 'failed', error_code: 'provider_timeout' });
    });
  });

  it('the web role ends open streams when it stops, and frees their slots', async () => {
    const web = await startWeb({ ...services(), config: testConfig() });
    const user = await makeUser();
    const id = await insertGeneration(user.id, 'processing');
    const connection = await openSse(web.url, streamPath(id), user.token);
    await connection.next();
    const started = Date.now();
    await web.stop();
    expect(Date.now() - started).to.be.below(3000);
    expect(await connection.endsWithin(1000)).to.equal(true);
    expect(await leaseCount(user.id)).to.equal(0);
  });
});
