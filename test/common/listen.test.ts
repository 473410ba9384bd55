import { expect } from 'chai';
import net from 'node:net';
import { ConfigError } from '../../config';
import { listen, listenFailure } from '../../common/listen';

function closed(server: net.Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

describe('listening on a port a setting chose', () => {
  it('answers the port it listens on, the one picked for 0', async () => {
    const server = net.createServer();
    const port = await listen(server, 0, '127.0.0.1', 'PORT');
    try {
      expect(port).to.equal((server.address() as net.AddressInfo).port).and.be.above(0);
    } finally {
      await closed(server);
    }
  });

  it('a port another program holds: a configuration error naming the setting to change', async () => {
    const holder = net.createServer();
    const port = await listen(holder, 0, '127.0.0.1', 'ANY');
    try {
      const refused = await listen(net.createServer(), port, '127.0.0.1', 'METRICS_PORT').then(() => null, (error: Error) => error);
      expect(refused).to.be.instanceOf(ConfigError);
      expect(refused!.message).to.equal(`port ${port} (METRICS_PORT) on 127.0.0.1 is taken by another program; set METRICS_PORT to a free port`);
    } finally {
      await closed(holder);
    }
  });

  it('an address this machine does not have: a configuration error naming HOST', async () => {
    // 203.0.113.0/24 is reserved for documentation: no interface here has it (binding sends nothing).
    const refused = await listen(net.createServer(), 0, '203.0.113.123', 'PORT').then(() => null, (error: Error) => error);
    expect(refused).to.be.instanceOf(ConfigError);
    expect(refused!.message).to.contain('203.0.113.123 (HOST)').and.contain('set HOST');
  });

  it('a port that needs privileges names the setting; any other failure stays as it is', () => {
    const denied = Object.assign(new Error('listen EACCES'), { code: 'EACCES' });
    expect(listenFailure(denied, 80, '0.0.0.0', 'PORT').message).to.equal('port 80 (PORT) needs privileges this process does not have; set PORT to 1024 or above');
    const other = Object.assign(new Error('listen EMFILE'), { code: 'EMFILE' });
    expect(listenFailure(other, 8080, '127.0.0.1', 'PORT')).to.equal(other);
  });
});
