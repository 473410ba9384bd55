import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import type { Knex } from 'knex';

/**
 * A small closed-loop load generator: `concurrency` loops run a step back to back for `durationMs`
 * over keep-alive connections, after a short warm-up. Enough to compare two servers measured in
 * the same run; no absolute claims.
 */
export interface LoadResult {
  /** Requests answered inside the measured window (after the warm-up). */
  requests: number;
  /** Every request sent, warm-up included: the divisor for server CPU time. */
  sent: number;
  errors: number;
  rps: number;
  p50Ms: number;
  p95Ms: number;
  p99Ms: number;
}

export interface LoadRequest {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface LoadOptions {
  concurrency?: number;
  durationMs?: number;
  warmupMs?: number;
}

/** The value at `fraction` of `sorted` (ascending; nearest rank below), 0 for none. */
export function percentile(sorted: number[], fraction: number): number {
  if (!sorted.length) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))];
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

/** One HTTP request over a keep-alive agent, answering the status and the body text. */
export function send(agent: http.Agent, baseUrl: string, request: LoadRequest): Promise<{ status: number; body: string }> {
  const base = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const outgoing = http.request(
      { agent, host: base.hostname, port: base.port, method: request.method ?? 'GET', path: request.path, headers: request.headers },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    outgoing.on('error', reject);
    outgoing.end(request.body);
  });
}

/** Runs `step(loop)` in `concurrency` loops over a keep-alive `http.Agent`; a step answers whether it succeeded. */
export async function runLoops(step: (loop: number, agent: http.Agent) => Promise<boolean>, options: LoadOptions = {}): Promise<LoadResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.concurrency ?? defaultConcurrency });
  try {
    return await measureLoops((loop) => step(loop, agent), options);
  } finally {
    agent.destroy();
  }
}

const defaultConcurrency = 32;

/** Runs `step(loop)` in `concurrency` loops for the warm-up and `durationMs`, timing each step after the warm-up. */
async function measureLoops(step: (loop: number) => Promise<boolean>, options: LoadOptions): Promise<LoadResult> {
  const { concurrency = defaultConcurrency, durationMs = 5000, warmupMs = 1000 } = options;
  const latencies: number[] = [];
  let errors = 0;
  let sent = 0;
  const measureFrom = Date.now() + warmupMs;
  const ends = measureFrom + durationMs;

  await Promise.all(Array.from({ length: concurrency }, async (_, loop) => {
    while (Date.now() < ends) {
      const startedAt = Date.now();
      const started = process.hrtime.bigint();
      const ok = await step(loop).catch(() => false);
      sent += 1;
      if (startedAt < measureFrom || Date.now() > ends) continue;
      if (ok) latencies.push(Number(process.hrtime.bigint() - started) / 1e6);
      else errors += 1;
    }
  }));
  latencies.sort((a, b) => a - b);
  return {
    requests: latencies.length,
    sent,
    errors,
    rps: Math.round(latencies.length / (durationMs / 1000)),
    p50Ms: round(percentile(latencies, 0.5)),
    p95Ms: round(percentile(latencies, 0.95)),
    p99Ms: round(percentile(latencies, 0.99)),
  };
}

/**
 * Load from independent requests: `next(i)` names the i-th request. Each loop has its own
 * connection (`RawHttpConnection`), which costs the client a fraction of what `http.request` does:
 * on two cores the load generator takes CPU from the server it measures, and with Node's client
 * a bigger answer cost the client more than the server.
 */
export async function runLoad(baseUrl: string, next: (index: number) => LoadRequest, options: LoadOptions = {}): Promise<LoadResult> {
  const { hostname, port, host } = new URL(baseUrl);
  const connections = Array.from({ length: options.concurrency ?? defaultConcurrency }, () => new RawHttpConnection(hostname, Number(port), host));
  let counter = 0;
  try {
    return await measureLoops(async (loop) => (await connections[loop].request(next(counter++))) < 400, options);
  } finally {
    for (const connection of connections) connection.close();
  }
}

/**
 * One keep-alive HTTP/1.1 connection sending one request at a time, reading of each answer only its
 * status and as many bytes as its `Content-Length` says (the API frames every answer a load asks
 * for with it). After an answer saying `Connection: close`, or a connection lost, the next request
 * opens a new one.
 */
class RawHttpConnection {
  private socket: net.Socket | null = null;
  private received: Buffer | null = null;
  /** The answer's whole length once its head is read; -1 before. */
  private answerBytes = -1;
  private status = 0;
  /** Whether the answer being read said `Connection: close`. */
  private closing = false;
  private waiting: { resolve: (status: number) => void; reject: (error: Error) => void } | null = null;

  constructor(private readonly hostname: string, private readonly port: number, private readonly hostHeader: string) {}

  /** Sends `request` and resolves with the answer's status once the whole answer has arrived. */
  request(request: LoadRequest): Promise<number> {
    const head = [`${request.method ?? 'GET'} ${request.path} HTTP/1.1`, `Host: ${this.hostHeader}`];
    for (const [name, value] of Object.entries(request.headers ?? {})) head.push(`${name}: ${value}`);
    if (request.body !== undefined) head.push(`Content-Length: ${Buffer.byteLength(request.body)}`);
    const bytes = `${head.join('\r\n')}\r\n\r\n${request.body ?? ''}`;
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.connected().write(bytes);
    });
  }

  close(): void {
    this.socket?.destroy();
    this.socket = null;
  }

  private connected(): net.Socket {
    if (this.socket) return this.socket;
    const socket = net.connect(this.port, this.hostname);
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.read(chunk));
    const lost = (error?: Error) => {
      // A connection this one already let go of (`close`) has no request waiting on it.
      if (this.socket !== socket) return;
      this.socket = null;
      this.received = null;
      this.answerBytes = -1;
      this.settle(error ?? new Error('connection closed before the answer'));
    };
    socket.on('error', lost);
    socket.on('close', () => lost());
    this.socket = socket;
    return socket;
  }

  private read(chunk: Buffer): void {
    this.received = this.received ? Buffer.concat([this.received, chunk]) : chunk;
    if (this.answerBytes < 0) {
      const headEnd = this.received.indexOf('\r\n\r\n');
      if (headEnd < 0) return;
      const head = this.received.toString('latin1', 0, headEnd);
      this.status = Number(head.slice(9, 12));
      const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
      if (!length && this.status !== 304 && this.status !== 204) {
        this.close();
        this.settle(new Error('the load generator reads only answers framed by Content-Length'));
        return;
      }
      this.answerBytes = headEnd + 4 + (length ? Number(length[1]) : 0);
      this.closing = /\r\nconnection:\s*close/i.test(head);
    }
    if (this.received.length < this.answerBytes) return;
    this.received = null;
    this.answerBytes = -1;
    // The next request goes on a new connection, not on this one the server is closing.
    if (this.closing) this.close();
    this.settle(null);
  }

  private settle(error: Error | null): void {
    const waiting = this.waiting;
    this.waiting = null;
    if (!waiting) return;
    if (error) waiting.reject(error);
    else waiting.resolve(this.status);
  }
}

/** CPU time (user + system) a process has used so far, from /proc (Linux). */
export function processCpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
  // utime and stime are the 12th and 13th fields after the command name, in clock ticks (100 Hz).
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** The pid of the Postgres postmaster and those of its live children (backends, walwriter…), from /proc (Linux). */
async function postgresProcesses({ db }: { db: Knex }): Promise<{ postmaster: number; children: number[] }> {
  const { rows } = await db.raw<{ rows: { pid: number }[] }>('select pg_backend_pid() as pid');
  const parentOf = (pid: number | string) => Number(/PPid:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
  const postmaster = parentOf(rows[0].pid);
  const children = readdirSync('/proc').filter((entry) => /^\d+$/.test(entry) && ifAlive(() => parentOf(entry)) === postmaster).map(Number);
  return { postmaster, children };
}

/** Runs `read` on a process that may have ended since it was listed: undefined then. */
function ifAlive<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}

/**
 * CPU ms the Postgres server has used: the postmaster with the children it has reaped, and its
 * live children (backends, walwriter…), from /proc (Linux).
 */
export async function postgresCpuMs(services: { db: Knex }): Promise<number> {
  const { postmaster, children } = await postgresProcesses(services);
  const fields = readFileSync(`/proc/${postmaster}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
  const ownMs = (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 10;
  return children.reduce((sum, pid) => sum + (ifAlive(() => processCpuMs(pid)) ?? 0), ownMs);
}

/**
 * CPU ms of each live Postgres process so far, by whose it is: a backend by the client process at
 * the other end of its connection (`clients`: name to pid, found with `ss`: by the client's TCP
 * port, or by the other end of a Unix socket), `other clients` when that process is not named or
 * `ss` is missing; a background process (walwriter, checkpointer, autovacuum…) by its title.
 * Reaped processes are not counted: compare two readings of long-lived connections.
 */
export async function postgresCpuByClient(services: { db: Knex }, clients: Record<string, number>): Promise<Record<string, number>> {
  const { children } = await postgresProcesses(services);
  const nameOfPid = (pid: number | undefined) => (pid === undefined ? undefined : Object.entries(clients).find(([, client]) => client === pid)?.[0]) ?? 'other clients';
  const ownerOfPort = new Map<number, string>();
  for (const line of socketTable('-tnpH').split('\n')) {
    const match = /^\S+\s+\d+\s+\d+\s+\S+:(\d+)\s+\S+\s+users:\(\("[^"]*",pid=(\d+)/.exec(line);
    if (match) ownerOfPort.set(Number(match[1]), nameOfPid(Number(match[2])));
  }
  const clientOfPid = unixSocketPeers();
  const byOwner: Record<string, number> = {};
  for (const pid of children) {
    const reading = ifAlive(() => ({ title: readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim(), ms: processCpuMs(pid) }));
    if (!reading) continue;
    const port = /\((\d+)\)/.exec(reading.title)?.[1];
    const owner = port ? ownerOfPort.get(Number(port)) ?? 'other clients'
      : reading.title.includes('[local]') ? nameOfPid(clientOfPid.get(pid))
        : reading.title.replace(/^postgres:\s*/, '').replace(/\s.*$/, '');
    byOwner[owner] = (byOwner[owner] ?? 0) + reading.ms;
  }
  return byOwner;
}

/** `ss <options>` (iproute2): each connection with the process at its local end; empty where `ss` is missing. */
function socketTable(options: string): string {
  try {
    return execFileSync('ss', [options], { encoding: 'utf8' });
  } catch {
    return '';
  }
}

/** The process at the other end of each process's Unix stream socket (`ss -xpH`: each end's inode and its peer's). */
function unixSocketPeers(): Map<number, number> {
  const ends = [...socketTable('-xpH').matchAll(/^u_str\s+\S+\s+\d+\s+\d+\s+\S+\s+(\d+)\s+\S+\s+(\d+)\s+users:\(\("[^"]*",pid=(\d+)/gm)]
    .map((match) => ({ inode: match[1], peer: match[2], pid: Number(match[3]) }));
  const pidOfInode = new Map(ends.map((end) => [end.inode, end.pid]));
  const peers = new Map<number, number>();
  for (const end of ends) {
    const peer = pidOfInode.get(end.peer);
    if (peer !== undefined && peer !== end.pid) peers.set(end.pid, peer);
  }
  return peers;
}

/**
 * Runs a load against a server process and tells the server's CPU time per request. On a 2-core
 * machine the load generator competes with the server, so throughput alone can hide what the
 * server spends; CPU per request cannot.
 */
export async function withServerCpu(pid: number, run: () => Promise<LoadResult>): Promise<LoadResult & { serverCpuUsPerRequest: number }> {
  const before = processCpuMs(pid);
  const result = await run();
  return { ...result, serverCpuUsPerRequest: Math.round(((processCpuMs(pid) - before) * 1000) / Math.max(1, result.sent)) };
}

export function formatLoad(name: string, result: LoadResult): string {
  return `${name.padEnd(46)} ${String(result.rps).padStart(7)} req/s   p50 ${result.p50Ms} ms   p95 ${result.p95Ms} ms   p99 ${result.p99Ms} ms${result.errors ? `   errors ${result.errors}` : ''}`;
}

/**
 * Measures a baseline and a subject in alternating rounds (A B A B …) so drift in machine load
 * touches both alike, and keeps each one's best round.
 */
export async function compareLoads<Result extends LoadResult>(
  baseline: () => Promise<Result>,
  subject: () => Promise<Result>,
  rounds = 2,
): Promise<{ baseline: Result; subject: Result; ratio: number }> {
  let bestBaseline: Result | null = null;
  let bestSubject: Result | null = null;
  for (let round = 0; round < rounds; round += 1) {
    const a = await baseline();
    const b = await subject();
    if (!bestBaseline || a.rps > bestBaseline.rps) bestBaseline = a;
    if (!bestSubject || b.rps > bestSubject.rps) bestSubject = b;
  }
  return { baseline: bestBaseline!, subject: bestSubject!, ratio: bestSubject!.rps / bestBaseline!.rps };
}
