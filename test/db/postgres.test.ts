import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import pg from 'pg';
import { ConfigError } from '../../config';
import { defaultEmbeddedPort, startEmbeddedPostgres } from '../../db/postgres';
import { freePort, silentLogger } from '../harness';

/** Holds a port the way another copy of the project's Postgres would; null when someone already holds it. */
async function occupy(port: number): Promise<net.Server | null> {
  const server = net.createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(null));
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

describe('the embedded Postgres port', function () {
  this.timeout(90_000);
  let dataDir: string;
  const held: net.Server[] = [];
  beforeEach(() => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'effects-pg-port-'));
    chmodSync(dataDir, 0o755);
  });
  afterEach(() => {
    for (const server of held.splice(0)) server.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('EMBEDDED_PG_PORT on a taken port stops the start with a message naming the port and the variable', async () => {
    const port = await freePort();
    held.push((await occupy(port))!);
    const error = await startEmbeddedPostgres({ directory: path.join(dataDir, 'postgres'), port, database: 'app', log: silentLogger() }).then(() => null, (thrown: Error) => thrown);
    expect(error).to.be.instanceOf(ConfigError);
    expect(error!.message).to.contain(String(port)).and.contain('EMBEDDED_PG_PORT');
  });

  it('without EMBEDDED_PG_PORT, a taken 54329 (a second copy of the project) makes it pick a free port and remember it under the data directory', async () => {
    const blocker = await occupy(defaultEmbeddedPort);
    if (blocker) held.push(blocker);
    const postgres = await startEmbeddedPostgres({ directory: path.join(dataDir, 'postgres'), port: null, database: 'app', log: silentLogger() });
    try {
      const portFile = path.join(dataDir, 'embedded-pg-port');
      expect(existsSync(portFile)).to.equal(true);
      const remembered = Number(readFileSync(portFile, 'utf8'));
      expect(remembered).to.not.equal(defaultEmbeddedPort);
      expect(new URL(postgres.url).port).to.equal(String(remembered));
      const client = new pg.Client({ connectionString: postgres.url });
      await client.connect();
      expect((await client.query('select 1 as one')).rows).to.deep.equal([{ one: 1 }]);
      await client.end();
      // A second process on the same data directory finds the running server on that port.
      const again = await startEmbeddedPostgres({ directory: path.join(dataDir, 'postgres'), port: null, database: 'app', log: silentLogger() });
      expect(again.url).to.equal(postgres.url);
    } finally {
      await postgres.stop();
    }
  });
});
