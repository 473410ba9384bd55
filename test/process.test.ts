import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './harness';

async function waitForReady(url: string, deadlineMs: number): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < deadlineMs) {
    try {
      const response = await fetch(`${url}/readyz`);
      if (response.status === 200) return Date.now() - started;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error('service did not become ready');
}

function portAcceptsConnections(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => { socket.destroy(); resolve(true); });
    socket.once('error', () => resolve(false));
  });
}

describe('the service process on embedded defaults', function () {
  this.timeout(120_000);
  let dataDir: string;
  let child: ChildProcess;

  before(() => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'effects-process-'));
    chmodSync(dataDir, 0o755);
  });
  after(() => {
    child?.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('becomes ready on its own, then exits 0 on SIGTERM within 25 s and stops its Postgres', async () => {
    const port = await freePort();
    const postgresPort = await freePort();
    const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, PORT: String(port), EMBEDDED_PG_PORT: String(postgresPort), LOG_LEVEL: 'warn' };
    for (const name of Object.keys(env)) if (/^(DATABASE_URL|S3_|PROVIDER_URL)/.test(name)) delete env[name];
    child = spawn(process.execPath, [path.join(__dirname, '..', 'main.js'), 'all'], { env, stdio: 'ignore' });
    await waitForReady(`http://127.0.0.1:${port}`, 90_000);
    expect(await portAcceptsConnections(postgresPort)).to.equal(true);

    const stoppedAt = Date.now();
    const exitCode = await new Promise<number | null>((resolve) => {
      child.once('exit', (code) => resolve(code));
      child.kill('SIGTERM');
    });
    expect(exitCode).to.equal(0);
    expect(Date.now() - stoppedAt).to.be.below(25_000);
    expect(await portAcceptsConnections(postgresPort)).to.equal(false);
  });
});
