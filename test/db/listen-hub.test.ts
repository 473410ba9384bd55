import { expect } from 'chai';
import pg from 'pg';
import { notify } from '../../db/channels';
import { ListenHub, type HubSubscriber } from '../../db/listen-hub';
import { databaseUrl, services, silentLogger } from '../harness';
import { eventually } from '../../scripts/wait';

describe('the LISTEN hub', () => {
  let hub: ListenHub;
  const query = pg.Client.prototype.query;
  /** Statements sent on a client whose previous one had not answered yet (node-pg queues them and warns). */
  let sentWhileBusy: string[];

  beforeEach(() => {
    hub = new ListenHub({ connection: { connectionString: databaseUrl() }, log: silentLogger() });
    sentWhileBusy = [];
    pg.Client.prototype.query = function (this: pg.Client & { _queryQueue: unknown[]; _activeQuery: unknown }, ...args: unknown[]) {
      if (this._activeQuery || this._queryQueue.length) sentWhileBusy.push(String(args[0]));
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query;
  });
  afterEach(async () => {
    pg.Client.prototype.query = query;
    await hub.stop();
  });

  it('sends one statement at a time when subscribers of one channel and the probe arrive together, and each hears its object', async () => {
    const heard: string[] = [];
    const subscriber = (id: string): HubSubscriber => ({ notify: (payload) => heard.push(`${id}:${String(payload.status)}`), resync: () => undefined });
    const ids = ['a', 'b', 'c', 'd'];
    await Promise.all([...ids.map((id) => hub.subscribe('generation_status', id, subscriber(id))), hub.probe(), hub.subscribe('payment_status', null, subscriber('all'))]);
    await Promise.all([hub.probe(), hub.subscribe('generation_status', 'e', subscriber('e')), hub.probe()]);
    expect(sentWhileBusy).to.deep.equal([]);

    await services().db.transaction((trx) => notify(trx, 'generation_status', { id: 'c', user_id: 'u', status: 'processing', error_code: null }));
    await eventually(() => heard.length, (count) => count === 1);
    expect(heard).to.deep.equal(['c:processing']);
  });
});
