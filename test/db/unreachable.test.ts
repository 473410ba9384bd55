import { expect } from 'chai';
import { isUnreachable, untilReachable } from '../../db/unreachable';

function withCode(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

describe('an unreachable database, told from other errors', () => {
  it('is a refused or reset connection, a Unix socket with no server, a server shutting down or starting, a lost connection, a pool that found no connection', () => {
    const unreachable = [
      withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'),
      withCode('read ECONNRESET', 'ECONNRESET'),
      Object.assign(withCode('connect ENOENT /tmp/.s.PGSQL.54329', 'ENOENT'), { syscall: 'connect' }),
      withCode('terminating connection due to administrator command', '57P01'),
      withCode('the database system is shutting down', '57P03'),
      withCode('connection failure', '08006'),
      new Error('Connection terminated unexpectedly'),
      new Error('Client has encountered a connection error and is not queryable'),
      Object.assign(new Error('Knex: Timeout acquiring a connection. The pool is probably full.'), { name: 'KnexTimeoutError' }),
      new Error('select 1 - wrapped', { cause: withCode('connect ECONNREFUSED', 'ECONNREFUSED') }),
    ];
    for (const error of unreachable) expect(isUnreachable(error), error.message).to.equal(true);
  });

  it('is not a statement the database refused, nor a bug', () => {
    const reachable = [
      withCode('duplicate key value violates unique constraint', '23505'),
      withCode('deadlock detected', '40P01'),
      withCode('invalid input syntax for type uuid', '22P02'),
      Object.assign(withCode("ENOENT: no such file or directory, open 'demo/poster.jpg'", 'ENOENT'), { syscall: 'open' }),
      new TypeError('cannot read properties of undefined'),
      'a string',
      null,
    ];
    for (const error of reachable) expect(isUnreachable(error), String(error)).to.equal(false);
  });

  it('untilReachable retries while the database is unreachable, and throws other errors at once', async () => {
    let calls = 0;
    expect(await untilReachable(async () => {
      calls += 1;
      if (calls < 3) throw withCode('connect ECONNREFUSED', 'ECONNREFUSED');
      return 'recorded';
    }, 5000)).to.equal('recorded');
    expect(calls).to.equal(3);
    calls = 0;
    const refused = await untilReachable(async () => {
      calls += 1;
      throw withCode('duplicate key', '23505');
    }, 5000).catch((error: Error) => error);
    expect(refused).to.be.instanceOf(Error);
    expect(calls).to.equal(1);
  });

  it('untilReachable gives up after its budget with the last error', async () => {
    const started = Date.now();
    const error = await untilReachable(async () => {
      throw withCode('connect ECONNREFUSED', 'ECONNREFUSED');
    }, 400).catch((thrown: Error) => thrown);
    expect((error as Error).message).to.include('ECONNREFUSED');
    expect(Date.now() - started).to.be.below(1500);
  });
});
