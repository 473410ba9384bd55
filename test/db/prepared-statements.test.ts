import { expect } from 'chai';
import pg from 'pg';
import { preparesStatements } from '../../db/prepared-statements';
import { databaseUrl, services } from '../harness';

/** The prepared statements of this session whose text holds `marker` (the asking statement's own included when it is prepared). */
const preparedWith = (marker: string) => `select statement from pg_prepared_statements where statement like '%${marker}%'`;

describe('prepared statements (db/prepared-statements.ts)', function () {
  this.timeout(30_000);
  let client: pg.Client;

  beforeEach(async () => {
    client = new pg.Client({ connectionString: databaseUrl() });
    await client.connect();
    preparesStatements(client);
  });
  afterEach(async () => {
    await client.end();
  });

  const preparedTexts = async (marker: string): Promise<string[]> => (await client.query(preparedWith(marker))).rows.map((row) => row.statement);

  it('prepares a parameterised select, insert, update, delete or with on its second run on a connection, under a name from its text', async () => {
    await client.query('create temporary table prepared_probe (id integer primary key, note text)');
    const statements = [
      'insert into prepared_probe (id, note) values ($1, $2) on conflict (id) do nothing /* probe-insert */',
      'update prepared_probe set note = $2 where id = $1 /* probe-update */',
      'with found as (select id, note from prepared_probe where id = $1 and note = $2) select id, note from found /* probe-with */',
      'delete from prepared_probe where id = $1 and note = $2 /* probe-delete */',
    ];
    for (const text of statements) {
      await client.query(text, [1, 'a']);
      await client.query(text, [1, 'a']);
    }
    const read = { text: 'select id from prepared_probe where id = $1 /* probe-read */', values: [1] };
    expect((await client.query(read)).rows).to.deep.equal([]);
    expect(await preparedTexts('probe-read */')).to.deep.equal([]);
    expect((await client.query(read)).rows).to.deep.equal([]);
    const prepared = await client.query("select name, statement from pg_prepared_statements where statement like '%/* probe-%'");
    expect(prepared.rows.map((row) => row.statement).sort()).to.deep.equal([...statements, 'select id from prepared_probe where id = $1 /* probe-read */'].sort());
    for (const row of prepared.rows) expect(row.name).to.match(/^s[0-9a-f]{24}$/);
  });

  it('leaves unprepared a statement without parameters, one that returns *, and anything but DML', async () => {
    await client.query('select 1 as one /* unparameterised-probe */');
    await client.query('create temporary table returning_probe (id integer)');
    for (let run = 0; run < 3; run += 1) {
      await client.query('select 1 as one /* unparameterised-probe */');
      await client.query('select * from (select $1::int as n) t /* star-probe */', [1]);
      await client.query('select t.* from (select $1::int as n) t /* dot-star-probe */', [1]);
      await client.query('insert into returning_probe (id) values ($1) returning * /* returning-star-probe */', [1]);
      await client.query("set application_name = 'prepared-probe'");
    }
    expect(await preparedTexts('-probe */')).to.deep.equal([]);
    // A star over declared recordset columns is stable (pg-boss's inserts); one beside a table's is not.
    const recordset = 'select *, n + 1 as next from json_to_recordset($1::text::json) as x (n integer) /* recordset-probe */';
    const beside = [
      'select * from returning_probe, json_to_recordset($1::text::json) as x (n integer) /* table-star-probe */',
      `select *, n + 1 as next from json_to_recordset($1::text::json) as x (n integer)
        where not exists (select * from returning_probe where id = x.n) /* subquery-star-probe */`,
    ];
    for (let run = 0; run < 2; run += 1) {
      expect((await client.query(recordset, [JSON.stringify([{ n: 5 }])])).rows).to.deep.equal([{ n: 5, next: 6 }]);
      for (const text of beside) await client.query(text, [JSON.stringify([{ n: 5 }])]);
    }
    expect(await preparedTexts('star-probe */')).to.deep.equal([]);
    expect(await preparedTexts('recordset-probe */')).to.deep.equal([recordset]);
    await client.query('select count(*) from returning_probe where id = $1 /* count-star-probe */', [1]);
    await client.query('select count(*) from returning_probe where id = $1 /* count-star-probe */', [1]);
    expect(await preparedTexts('count-star-probe')).to.have.length(1);
  });

  const capped = (index: number) => `select $1::integer + ${index} as n /* cap-probe */`;
  const runTwice = async (text: string) => {
    for (let run = 0; run < 2; run += 1) expect((await client.query(text, [1])).rows).to.have.length(1);
  };

  it('keeps at most 250 prepared per connection, deallocating the least recently used; an evicted text prepares again', async () => {
    for (let index = 0; index < 255; index += 1) await runTwice(capped(index));
    const prepared = await preparedTexts('cap-probe');
    expect(prepared).to.have.length(250);
    expect(prepared).not.to.include(capped(0));
    expect(prepared).to.include(capped(5)).and.to.include(capped(254));
    expect((await client.query(capped(0), [41])).rows).to.deep.equal([{ n: 41 }]);
    expect((await client.query(capped(0), [41])).rows).to.deep.equal([{ n: 41 }]);
    expect(await preparedTexts('cap-probe')).to.include(capped(0)).and.have.length(250);
  });

  it('an eviction inside an aborted transaction leaves the evicted statement usable', async () => {
    for (let index = 0; index < 250; index += 1) await runTwice(capped(index));
    await client.query(capped(250), [1]);
    await client.query('begin');
    await client.query('select 1 / 0').catch(() => undefined);
    const refused = await client.query(capped(250), [1]).then(() => null, (error: Error) => error);
    expect(refused?.message).to.contain('current transaction is aborted');
    await client.query('rollback');
    // capped(0) was evicted but could not be deallocated: still prepared, and reused as it is.
    expect(await preparedTexts('cap-probe')).to.include(capped(0));
    for (let run = 0; run < 2; run += 1) {
      expect((await client.query(capped(0), [2])).rows).to.deep.equal([{ n: 2 }]);
      expect((await client.query(capped(250), [2])).rows).to.deep.equal([{ n: 252 }]);
    }
    expect(await preparedTexts('cap-probe')).to.include(capped(0)).and.to.include(capped(250));
  });

  it('a prepared result whose column type changed fails once, then runs unprepared on that connection', async () => {
    await client.query('create temporary table shape_probe (id integer primary key, amount integer)');
    await client.query('insert into shape_probe values (1, 5)');
    const read = () => client.query('select id, amount from shape_probe where id = $1 /* shape-probe */', [1]);
    expect((await read()).rows).to.deep.equal([{ id: 1, amount: 5 }]);
    expect((await read()).rows).to.deep.equal([{ id: 1, amount: 5 }]);
    expect(await preparedTexts('shape-probe */')).to.have.length(1);
    await client.query('alter table shape_probe alter column amount type text');
    const failure = await read().then(() => null, (error: Error & { code?: string }) => error);
    expect(failure?.code).to.equal('0A000');
    expect((await read()).rows).to.deep.equal([{ id: 1, amount: '5' }]);
    expect((await read()).rows).to.deep.equal([{ id: 1, amount: '5' }]);
  });

  it('the callback form (knex) is named the same way and gets its answer and its errors', async () => {
    const viaCallback = (text: string, values: unknown[]) => new Promise<pg.QueryResult>((resolve, reject) => {
      (client.query as unknown as (config: pg.QueryConfig, callback: (error: Error | null, result: pg.QueryResult) => void) => void)(
        { text, values }, (error, result) => (error ? reject(error) : resolve(result)),
      );
    });
    for (let run = 0; run < 2; run += 1) {
      expect((await viaCallback('select $1::int * 2 as doubled /* callback-probe */', [21])).rows).to.deep.equal([{ doubled: 42 }]);
    }
    expect(await preparedTexts('callback-probe')).to.have.length(1);
    for (let run = 0; run < 2; run += 1) {
      const error = await viaCallback('select $1::int / 0 as broken /* callback-error-probe */', [1]).then(() => null, (thrown: Error) => thrown);
      expect(error?.message).to.contain('division by zero');
    }
  });

  it('the service\'s own connections prepare: knex\'s pool and pg-boss\'s', async () => {
    const { db, boss } = services();
    const viaKnex = await db.transaction(async (trx) => {
      await trx.raw('select ?::text as marker /* knex-pool-probe */', ['x']);
      await trx.raw('select ?::text as marker /* knex-pool-probe */', ['x']);
      return (await trx.raw(preparedWith('knex-pool-probe'))).rows;
    });
    expect(viaKnex).to.have.length(1);
    // Asked by a parameterised statement: once it is prepared, it sees itself. Its pool has 4
    // connections, so within 9 runs one of them runs it a second time.
    const seen: number[] = [];
    for (let run = 0; run < 9; run += 1) {
      seen.push((await boss.getDb().executeSql(`${preparedWith('boss-pool-probe')} and $1::text is not null`, ['x'])).rows.length);
    }
    expect(seen).to.include(1);
  });
});
