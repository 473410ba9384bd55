import { randomUUID } from 'node:crypto';
import sharp from 'sharp';
import type { Knex } from 'knex';
import { createGeneration } from '../api/generations/create';
import { createUpload } from '../api/uploads/uploads';
import type { PollPacing } from '../db/generations/schedule-poll';
import type { ModelRoutes } from '../db/catalog/model';
import type { ProviderKind } from '../common/model-route';
import type { ProviderAdapter } from '../clients/providers/adapter';
import { ProviderAdapters, providerAdapters } from '../clients/providers/registry';
import { configuredKinds } from '../pool/model-routes';
import type { RunningPart, Services } from '../services';
import { startProviderSimulator, type ProviderSimulator, type ProviderSimulatorOptions } from '../simulators/providers/provider-simulator';
import { startGenerationPipeline } from '../workers/generations/pipeline';
import { startPreviewConsumer } from '../workers/generations/preview-consumer';
import { freePort, services, startTestApp, testConfig, type TestApp } from './harness';
import { kindAccounts, kindRuns, simulatorApis, testKind } from './provider-kind';
import { demoStudioCategories } from '../db/studio/seed-studio-categories';
import { writeStudioCategories } from '../db/studio/write-studio-categories';
import { postToTicket } from '../scripts/upload-ticket';
import { makeUser } from './users';
import { eventually } from '../scripts/wait';

export async function balanceOf(userId: string): Promise<number> {
  return (await services().db('users').where({ id: userId }).first('balance')).balance;
}

/** How many generations and reserve/refund ledger rows exist: a refused creation leaves both as they were. */
export async function generationAndChargeCounts(): Promise<{ generations: number; ledger: number }> {
  const { db } = services();
  const [generations, ledger] = await Promise.all([
    db('generations').count<{ count: number }[]>('* as count'),
    db('credit_transactions').whereIn('kind', ['reserve', 'refund']).count<{ count: number }[]>('* as count'),
  ]);
  return { generations: generations[0].count, ledger: ledger[0].count };
}

/** The ledger rows of a user, oldest first, as `kind:amount:reference`. */
export async function ledgerOf(userId: string): Promise<{ kind: string; amount: number; reference: string }[]> {
  return services().db('credit_transactions').where({ user_id: userId }).whereIn('kind', ['reserve', 'refund']).orderBy('seq').select('kind', 'amount', 'reference');
}

const one = [{ min_photos: 1, max_photos: 1 }];

/** The demo catalog's effects (docs/mobile.md, "The demo catalog: what to try") as far as generations care. */
export const demoEffects = {
  'winter-portrait': { cost: 10, characters: one, output_type: 'image', model: 'image' },
  'multi-angle-hero': { cost: 15, characters: [{ min_photos: 1, max_photos: 4 }], output_type: 'image', model: 'image' },
  'royal-couple': { cost: 20, characters: [...one, ...one], output_type: 'image', model: 'image' },
  'twin-studio': { cost: 20, characters: [{ min_photos: 2, max_photos: 2 }, { min_photos: 2, max_photos: 2 }], output_type: 'image', model: 'image' },
  'family-trio': { cost: 30, characters: [{ min_photos: 1, max_photos: 3 }, { min_photos: 1, max_photos: 3 }, { min_photos: 0, max_photos: 2 }], output_type: 'image', model: 'image' },
  'dance-video': { cost: 40, characters: one, output_type: 'video', model: 'video' },
  'community-sticker': { cost: 5, characters: one, output_type: 'image', model: 'sticker' },
  'qa-safety': { cost: 10, characters: one, output_type: 'image', model: 'safety' },
  'qa-provider-error': { cost: 10, characters: one, output_type: 'image', model: 'error' },
} as const;

export type DemoSlug = keyof typeof demoEffects;

/** Inserts an effect row (the catalog's own table, only the columns a generation reads); answers its id. */
export async function insertEffect(slug: string, fields: Partial<{ cost: number; characters: object[]; output_type: string; model: string; model_max_photos: number | null; hidden: boolean; runs: ModelRoutes }> = {}): Promise<string> {
  const demo = (demoEffects as Record<string, object>)[slug] ?? demoEffects['winter-portrait'];
  const row = { ...demo, ...fields };
  // Under a test kind (provider-kind.ts) the effect runs its simulator model through that kind's protocol.
  const runs = fields.runs ?? kindRuns((row as { model: string }).model);
  const [effect] = await services().db('effects').insert({
    slug,
    name_ru: slug,
    name_en: slug,
    poster_key: `catalog/test/${slug}.jpg`,
    ...row,
    characters: JSON.stringify((row as { characters: object[] }).characters),
    ...(runs ? { runs: JSON.stringify(runs) } : {}),
  }).returning('id');
  return effect.id;
}

export async function insertDemoEffects(): Promise<Record<DemoSlug, string>> {
  const ids: Partial<Record<DemoSlug, string>> = {};
  for (const slug of Object.keys(demoEffects) as DemoSlug[]) ids[slug] = await insertEffect(slug);
  return ids as Record<DemoSlug, string>;
}

export function photo(width = 64, height = 48, colour = '#c08040'): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: colour } }).jpeg().toBuffer();
}

/** An upload with its ticket (as `POST /v1/uploads` makes it) and, unless `body` is null, its file posted through the ticket. */
export async function storedUpload(userId: string, body: Buffer | null, contentType = 'image/jpeg'): Promise<string> {
  const { db, storage } = services();
  const ticket = await createUpload(db, storage, userId, contentType);
  if (body) await postToTicket(ticket, body, contentType);
  return ticket.id;
}

/** A push device of the user, as `POST /v1/push/devices` keeps it: a terminal generation of theirs then sends a push job. */
export async function registeredPushDevice(userId: string, platform: 'ios' | 'android' = 'ios'): Promise<string> {
  const [row] = await services().db('push_devices').insert({ user_id: userId, token: `token-${randomUUID()}`, platform }).returning('id');
  return row.id;
}

/** The default poll pacing, for direct calls of the poll statements. */
export const defaultPollPacing: PollPacing = { minMs: 100, maxMs: 5000, callbackFallbackMinMs: 1000, callbackTrustS: 30 };

/** A first poll a minute away whatever the callbacks: the test decides when a task is polled. */
export const distantPolls: PollPacing = { minMs: 60_000, maxMs: 60_000, callbackFallbackMinMs: 60_000, callbackTrustS: 0 };

export async function statusOf(db: Knex, generationId: string): Promise<{ status: string; error_code: string | null }> {
  return db('generations').where({ id: generationId }).first('status', 'error_code');
}

export async function waitForTerminal(generationId: string, timeoutMs = 20_000): Promise<{ status: string; error_code: string | null }> {
  return eventually(() => statusOf(services().db, generationId), (row) => ['succeeded', 'failed'].includes(row?.status), timeoutMs);
}

/** Settings that keep the tests fast: short leases and claims, quick polls. */
export const fastPipeline: Record<string, string> = {
  ...kindAccounts({ 'acct-one': 2, 'acct-two': 2 }),
  SLOT_LEASE_S: '3',
  POLL_CLAIM_S: '1',
  POLL_MIN_INTERVAL_MS: '20',
  POLL_MAX_INTERVAL_MS: '200',
  DISPATCH_TICK_MS: '100',
};

export interface Pipeline {
  simulator: ProviderSimulator;
  services: Services;
  /** Each configured kind's adapter (wrapped by `adapter`), as the pipeline uses them. */
  adapters: ProviderAdapters;
  /** With `callbackApp`: the web app the provider's webhooks reach, which checks them as the provider signs them. */
  callbackApp: TestApp | null;
  stop(): Promise<void>;
}

/** `real` with the calls of `change` in place of its own; every other call (and all its arguments) reaches `real`. */
export function adapterWith(real: ProviderAdapter, change: Partial<ProviderAdapter>): ProviderAdapter {
  return {
    submit: change.submit ?? ((account, request) => real.submit(account, request)),
    findTask: change.findTask ?? ((account, reference) => real.findTask(account, reference)),
    poll: change.poll ?? ((account, taskId, route) => real.poll(account, taskId, route)),
    outcomeOfCallback: change.outcomeOfCallback ?? ((answer, route) => real.outcomeOfCallback(answer, route)),
    fetchResult: change.fetchResult ?? ((url) => real.fetchResult(url)),
    stageFile: change.stageFile ?? real.stageFile?.bind(real),
    cancel: change.cancel ?? real.cancel?.bind(real),
  };
}

/**
 * The provider simulator and the worker and media parts in this process, over the test run's
 * database and storage, with `fastPipeline` and `overrides` as configuration. Each configured kind's
 * tasks go through that kind's own adapter to the simulator's front of its protocol.
 */
export async function startPipeline(options: {
  config?: Record<string, string>;
  simulator?: Partial<ProviderSimulatorOptions>;
  media?: boolean;
  /** Wraps each kind's adapter over the simulator, to make the provider misbehave in ways the simulator cannot. */
  adapter?: (real: ProviderAdapter) => ProviderAdapter;
  /** Services of the pipeline instead of the run's (a database reached through a fault proxy). */
  services?: Partial<Services>;
  /** Starts a web app of its own that the provider's webhooks reach (PROVIDER_CALLBACK_BASE_URL), knowing the simulator's APIs. */
  callbackApp?: boolean;
} = {}): Promise<Pipeline> {
  const callbackPort = options.callbackApp ? await freePort() : null;
  const env = { ...fastPipeline, ...(callbackPort ? { PROVIDER_CALLBACK_BASE_URL: `http://127.0.0.1:${callbackPort}` } : {}), ...options.config };
  const config = testConfig(env);
  const accounts = Object.fromEntries(config.generations.providerAccounts.map((account) => [account.apiKey, account.slots]));
  const simulator = await startProviderSimulator({ latencyMs: 50, accounts, ...options.simulator });
  const simulatorEnv = { ...env, PROVIDER_URL: simulator.url, ...simulatorApis(simulator.url) };
  const pipelineServices: Services = { ...services(), ...options.services, config: testConfig(simulatorEnv) };
  const kinds = configuredKinds(config.generations.providerAccounts);
  const real = providerAdapters(kinds, { config: pipelineServices.config, simulatorUrl: simulator.url });
  const adapters = new ProviderAdapters(Object.fromEntries([...kinds].map((kind) => [kind, options.adapter ? options.adapter(real.of(kind)) : real.of(kind)])));
  const parts: RunningPart[] = [await startGenerationPipeline(pipelineServices, adapters)];
  if (options.media ?? true) parts.push(await startPreviewConsumer(pipelineServices));
  const callbackApp = callbackPort ? await startTestApp({ config: { ...simulatorEnv, PORT: String(callbackPort) } }) : null;
  return {
    simulator,
    services: pipelineServices,
    adapters,
    callbackApp,
    stop: async () => {
      await callbackApp?.close();
      for (const part of parts.reverse()) await part.stop();
      await simulator.stop();
    },
  };
}

/** Writes the demo studio categories into an emptied table, on the test kind's routes (`provider-kind.ts`). */
export async function insertStudioCategories(): Promise<void> {
  const rows = demoStudioCategories.map((row) => (testKind === 'simulator' ? row : { ...row, model: undefined, runs: kindRuns(row.model!)! }));
  await services().db.transaction((trx) => writeStudioCategories(trx, rows, { missingOnly: true }));
}

/** Accounts of each kind for `testConfig`: the simulator's `acct-one` and `acct-two`, and one account of every other kind. */
export const everyKindAccounts: Record<string, string> = {
  PROVIDER_ACCOUNTS: 'acct-one:2,acct-two:2',
  REPLICATE_ACCOUNTS: 'r8_test-token:2',
  FAL_ACCOUNTS: 'fal-id:fal-secret:2',
};

/**
 * `count` generations waiting in line (one user, one effect, one photo), oldest first, created as
 * `POST /v1/generations` creates them: in the simulator's line, or in `kind`'s (an effect with a
 * route of that kind only, created where every kind has accounts).
 */
export async function waitingGenerations(count: number, kind: ProviderKind = 'simulator'): Promise<string[]> {
  const user = await makeUser({ guest: true, balance: 10 * count });
  const effectId = await insertEffect(`winter-portrait-${kind}-${randomUUID()}`, kind === 'simulator' ? {} : { runs: { [kind]: { model: 'image' } } });
  const upload = await storedUpload(user.id, await photo());
  const creating = kind === 'simulator' ? services() : { ...services(), config: testConfig(everyKindAccounts) };
  const ids: string[] = [];
  for (let index = 0; index < count; index += 1) {
    ids.push((await createGeneration(creating, user.id, { effect_id: effectId, characters: [[upload]] }, null)).body.id);
  }
  return ids;
}

/** A generation row as the pipeline would have written it. */
export async function insertGeneration(userId: string, status: 'pending' | 'processing' | 'succeeded' | 'failed' = 'pending', errorCode: string | null = null): Promise<string> {
  const id = randomUUID();
  await services().db('generations').insert({
    id,
    user_id: userId,
    effect_id: randomUUID(),
    status,
    cost: 10,
    output_type: 'image',
    model: 'image',
    inputs: JSON.stringify([]),
    error_code: status === 'failed' ? (errorCode ?? 'provider_error') : null,
    started_at: status === 'pending' ? null : new Date(),
    finished_at: status === 'succeeded' || status === 'failed' ? new Date() : null,
  });
  return id;
}

/** A status change the way the pipeline makes it: the update and its NOTIFY in one transaction. */
export async function changeStatus(id: string, status: 'processing' | 'succeeded' | 'failed', errorCode: string | null = null): Promise<void> {
  await services().db.transaction(async (trx) => {
    const [row] = await trx('generations').where({ id }).update({
      status,
      error_code: status === 'failed' ? (errorCode ?? 'provider_error') : null,
      finished_at: status === 'processing' ? null : trx.fn.now(),
      started_at: trx.raw('coalesce(started_at, now())'),
    }).returning(['id', 'user_id', 'status', 'error_code']);
    await trx.raw("select pg_notify('generation_status', ?)", [JSON.stringify(row)]);
  });
}
