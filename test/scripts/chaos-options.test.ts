import { expect } from 'chai';
import { chaosDefaults, parseChaosOptions } from '../../scripts/chaos';
import { kindOfRequest } from '../../scripts/chaos/provider-link';

describe('npm run chaos, its options and what it counts', () => {
  it('runs on the simulator\'s kind unless told; --kind names one, --kinds all or a list runs once per kind', () => {
    expect(parseChaosOptions([]).kinds).to.deep.equal(['simulator']);
    expect(parseChaosOptions(['--kind', 'fal']).kinds).to.deep.equal(['fal']);
    expect(parseChaosOptions(['--kinds', 'all', '--users', '5'])).to.deep.equal({ options: { ...chaosDefaults, users: 5 }, kinds: ['simulator', 'replicate', 'fal'] });
    expect(parseChaosOptions(['--kinds', 'replicate,fal']).kinds).to.deep.equal(['replicate', 'fal']);
  });

  it('refuses a kind that does not exist, or named twice', () => {
    expect(() => parseChaosOptions(['--kind', 'openai'])).to.throw('bad flag --kind openai');
    expect(() => parseChaosOptions(['--kinds', 'fal,openai'])).to.throw('--kinds takes all or a list of simulator, replicate, fal');
    expect(() => parseChaosOptions(['--kinds', 'fal,fal'])).to.throw('--kinds takes all');
  });

  it('tells polls (by task), submissions and lookups apart in each kind\'s protocol', () => {
    const cases: [string, string, ReturnType<typeof kindOfRequest>][] = [
      ['GET', '/v1/tasks/t1', { kind: 'poll', taskId: 't1' }],
      ['POST', '/v1/tasks', { kind: 'submission' }],
      ['GET', '/v1/tasks?client_reference=g1', { kind: 'lookup' }],
      ['POST', '/v1/files', { kind: 'other' }],
      ['GET', '/replicate/v1/predictions/p1', { kind: 'poll', taskId: 'p1' }],
      ['POST', '/replicate/v1/models/sim/image/predictions', { kind: 'submission' }],
      ['GET', '/replicate/v1/predictions?created_after=2026-01-01T00%3A00%3A00Z', { kind: 'lookup' }],
      ['POST', '/replicate/v1/predictions/p1/cancel', { kind: 'other' }],
      ['POST', '/replicate/v1/files', { kind: 'other' }],
      ['GET', '/fal/queue/sim/image/requests/r1/status?logs=0', { kind: 'poll', taskId: 'r1' }],
      ['GET', '/fal/queue/sim/image/requests/r1', { kind: 'poll', taskId: 'r1' }],
      ['POST', '/fal/queue/sim/image?fal_webhook=http%3A%2F%2F127.0.0.1%2Fw', { kind: 'submission' }],
      ['PUT', '/fal/queue/sim/image/requests/r1/cancel', { kind: 'other' }],
      ['POST', '/fal/rest/storage/upload/initiate?storage_type=fal-cdn-v3', { kind: 'other' }],
    ];
    for (const [method, path, expected] of cases) expect(kindOfRequest(method, path), `${method} ${path}`).to.deep.equal(expected);
  });
});
