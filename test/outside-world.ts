import { expect } from 'chai';
import nock from 'nock';

/**
 * The hooks of a test file whose outside services are answered by nock: nothing leaves for the
 * outside world, loopback stays open (the rest of the run shares this process and talks to its own
 * servers there), and every answer a test set up must have been asked for.
 */
export function useOutsideWorld(): void {
  before(() => {
    nock.disableNetConnect();
    nock.enableNetConnect((host) => host.startsWith('127.0.0.1') || host.startsWith('localhost'));
  });
  afterEach(() => {
    const pending = nock.pendingMocks();
    nock.cleanAll();
    expect(pending, 'unused answers').to.deep.equal([]);
  });
  after(() => nock.enableNetConnect());
}
