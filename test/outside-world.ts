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

/**
 * The hooks of a test file whose node:http clients must behave as outside a test run. nock
 * intercepts from the moment any file of the run imports it, and hands every node:http request an
 * agent of its own: a keep-alive agent's socket is never reused, each request opens a connection.
 */
export function useUninterceptedHttp(): void {
  let intercepting = false;
  before(() => {
    intercepting = nock.isActive();
    if (intercepting) nock.restore();
  });
  after(() => {
    if (intercepting) nock.activate();
  });
}
