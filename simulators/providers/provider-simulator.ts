import { mkdtemp } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { listen } from '../../common/listen';
import type { Logger } from '../../common/logger';
import { FalFront } from './fal-front';
import { sendFile, sendJson } from './http-exchange';
import { NativeFront, sendError } from './native-front';
import { ReplicateFront } from './replicate-front';
import { TaskEngine, type EngineSettings, type ProviderSimulatorStats } from './task-engine';

export type { ProviderSimulatorStats } from './task-engine';

export interface ProviderSimulatorOptions {
  /** 0 picks a free port. */
  port?: number;
  host?: string;
  /** A task finishes this long after its submission (a video also not before its clip is encoded). */
  latencyMs: number;
  /** Share of tasks, 0..1, that end `failed` with `internal_error`, for load tests. */
  failureRate?: number;
  /** Known API keys and their concurrency caps; when absent, any key is accepted with `defaultConcurrency`. */
  accounts?: Record<string, number>;
  defaultConcurrency?: number;
  /** How long results and finished tasks are kept, so a long load test does not fill the disk. */
  resultTtlMs?: number;
  /** How long a file uploaded to the file store is kept (an hour unless told). */
  fileTtlMs?: number;
  log?: Logger;
}

/**
 * One simulated provider speaking three protocols over the same tasks, accounts and slots: its own
 * (`/v1/...`, `native-front.ts`), Replicate's (`/replicate/v1/...`, `replicate-front.ts`) and fal's
 * (`/fal/queue/...`, `/fal/rest/...`, `fal-front.ts`). The adapter of each kind is pointed at its
 * prefix (`replicateUrl`, `falQueueUrl`, `falRestUrl`, `falJwksUrl`).
 */
export interface ProviderSimulator {
  url: string;
  /** Base URL of its Replicate API (REPLICATE_API_URL). */
  replicateUrl: string;
  /** FAL_QUEUE_URL, FAL_REST_URL and FAL_JWKS_URL of its fal API. */
  falQueueUrl: string;
  falRestUrl: string;
  falJwksUrl: string;
  /** The Replicate webhook secret of an account (`GET /webhooks/default/secret`). */
  replicateSecretOf(apiKey: string): string;
  stop(): Promise<void>;
  stats(): ProviderSimulatorStats;
}

const DEFAULT_CONCURRENCY = 4;
const DEFAULT_RESULT_TTL_MS = 15 * 60_000;
const DEFAULT_FILE_TTL_MS = 60 * 60_000;

/** Starts the AI provider simulator: the providers' HTTP APIs on loopback, with real photo downloads and results. */
export async function startProviderSimulator(options: ProviderSimulatorOptions): Promise<ProviderSimulator> {
  const settings = checkedSettings(options);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'provider-simulator-'));
  const simulator = new Simulator(new TaskEngine(settings, dir));
  try {
    const url = await simulator.listen(options.port ?? 0, options.host ?? '127.0.0.1');
    settings.log?.info({ url }, 'provider simulator listening');
    return {
      url,
      replicateUrl: `${url}/replicate/v1`,
      falQueueUrl: `${url}/fal/queue`,
      falRestUrl: `${url}/fal/rest`,
      falJwksUrl: `${url}/fal/rest/.well-known/jwks.json`,
      replicateSecretOf: (apiKey) => simulator.replicate.secretOf(apiKey),
      stop: () => simulator.stop(),
      stats: () => simulator.engine.stats(),
    };
  } catch (error) {
    await simulator.stop();
    throw error;
  }
}

class Simulator {
  private readonly server = http.createServer((req, res) => this.engine.track(this.handle(req, res)));
  private readonly native: NativeFront;
  readonly replicate: ReplicateFront;
  private readonly fal: FalFront;
  private stopping: Promise<void> | null = null;

  constructor(readonly engine: TaskEngine) {
    this.native = new NativeFront(engine);
    this.replicate = new ReplicateFront(engine);
    this.fal = new FalFront(engine);
  }

  async listen(port: number, host: string): Promise<string> {
    // Its port is SIM_PROVIDER_PORT wherever a process starts it (`from-config.ts`).
    this.engine.url = `http://${host}:${await listen(this.server, port, host, 'SIM_PROVIDER_PORT')}`;
    return this.engine.url;
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.server.closeAllConnections();
      await new Promise<void>((resolve) => this.server.close(() => resolve()));
      await this.engine.stop();
    })();
    return this.stopping;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    try {
      const { pathname } = new URL(req.url ?? '/', 'http://simulator');
      const resultPath = /^\/results\/([^/]+)$/.exec(pathname);
      if (pathname.startsWith('/replicate/v1/')) await this.replicate.handle(req, res, pathname.slice('/replicate/v1'.length));
      else if (pathname.startsWith('/fal/')) await this.fal.handle(req, res, pathname.slice('/fal'.length));
      else if (req.method === 'GET' && resultPath) await this.serveResult(res, resultPath[1]);
      // The simulator's own counters, for load and fault tests that run it as a process of its own.
      else if (req.method === 'GET' && pathname === '/simulator/stats') sendJson(res, 200, this.engine.stats());
      else if (!(await this.native.handle(req, res, pathname))) sendError(res, 404, 'not_found', 'no such endpoint');
    } catch (error) {
      this.engine.settings.log?.error({ err: error, method: req.method, url: req.url }, 'provider simulator request failed');
      if (!res.headersSent) sendError(res, 500, 'internal_error', 'the simulator failed');
      else res.destroy();
    }
  }

  private async serveResult(res: http.ServerResponse, fileName: string): Promise<void> {
    const result = this.engine.result(fileName);
    if (!result || !(await sendFile(res, result.filePath, result.contentType))) return sendError(res, 404, 'not_found', 'no such result');
    this.engine.count('resultsServed');
  }
}

function checkedSettings(options: ProviderSimulatorOptions): EngineSettings {
  const failureRate = nonNegative('failureRate', options.failureRate ?? 0);
  if (failureRate > 1) throw new RangeError('failureRate must be between 0 and 1');
  return {
    latencyMs: nonNegative('latencyMs', options.latencyMs),
    failureRate,
    accounts: options.accounts
      ? new Map(Object.entries(options.accounts).map(([apiKey, cap]) => [apiKey, concurrencyCap(`accounts[${apiKey}]`, cap)]))
      : null,
    defaultConcurrency: concurrencyCap('defaultConcurrency', options.defaultConcurrency ?? DEFAULT_CONCURRENCY),
    resultTtlMs: nonNegative('resultTtlMs', options.resultTtlMs ?? DEFAULT_RESULT_TTL_MS),
    fileTtlMs: nonNegative('fileTtlMs', options.fileTtlMs ?? DEFAULT_FILE_TTL_MS),
    log: options.log?.child({ component: 'provider-simulator' }),
  };
}

function nonNegative(name: string, value: number): number {
  if (!Number.isFinite(value) || value < 0) throw new RangeError(`${name} must be a non-negative number`);
  return value;
}

function concurrencyCap(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer`);
  return value;
}
