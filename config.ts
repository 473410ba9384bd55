import { createPrivateKey, randomBytes, type KeyObject } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import path from 'node:path';
import { isProviderKind, providerKinds, type ModelRoute, type ProviderKind } from './common/model-route';
import { modelRoutesProblems, type RouteTask } from './common/model-route-check';
import { listenerUrl } from './common/addresses';
import type { LogFormat } from './common/logger';

/**
 * Every environment variable the service reads, in one place. `loadConfig` fails at start with a
 * message that names the bad variable; `.env.example` lists the same names with their defaults.
 */

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

function read(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

function text(env: Env, name: string, fallback: string): string {
  return read(env, name) ?? fallback;
}

function optionalText(env: Env, name: string): string | null {
  return read(env, name) ?? null;
}

function integer(env: Env, name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const raw = read(env, name);
  if (raw === undefined) return fallback;
  if (!/^-?\d+$/.test(raw)) throw new ConfigError(`${name} must be an integer`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}`);
  return value;
}

function fraction(env: Env, name: string, fallback: number): number {
  const raw = read(env, name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0 || value > 1) throw new ConfigError(`${name} must be a number between 0 and 1`);
  return value;
}

function flag(env: Env, name: string, fallback: boolean): boolean {
  const raw = read(env, name);
  if (raw === undefined) return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw.toLowerCase())) return true;
  if (['0', 'false', 'no', 'off'].includes(raw.toLowerCase())) return false;
  throw new ConfigError(`${name} must be 1 or 0`);
}

function url(env: Env, name: string): string | null {
  const raw = read(env, name);
  if (raw === undefined) return null;
  try {
    const parsed = new URL(raw);
    if (!['http:', 'https:', 'postgres:', 'postgresql:'].includes(parsed.protocol)) throw new Error();
  } catch {
    throw new ConfigError(`${name} must be an absolute URL`);
  }
  return raw.replace(/\/+$/, '');
}

/**
 * A link into the mobile app: a custom scheme (`effectsapp://`) or an https universal/app link base.
 * Schemes that run code or read local data in a browser are refused.
 */
function appLinkBase(env: Env, name: string, fallback: string): string {
  const raw = read(env, name) ?? fallback;
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(raw)?.[1]?.toLowerCase();
  if (!scheme || ['javascript', 'data', 'vbscript', 'file', 'blob'].includes(scheme) || /[\s"'<>]/.test(raw)) {
    throw new ConfigError(`${name} must be an app link base such as effectsapp:// or https://go.example.app/app`);
  }
  return raw;
}

/** An origin only (`https://media.example.com`): S3 signs paths from the root, so a path prefix cannot work. */
function origin(env: Env, name: string): string | null {
  const given = url(env, name);
  if (given !== null && new URL(given).origin !== given) throw new ConfigError(`${name} must be an origin (scheme, host and port) without a path`);
  return given;
}

/**
 * The address every server of the service binds. Unset: loopback in the embedded default (its
 * payment simulator gives credits away to anyone who reaches it), every interface beside a
 * configured database (a container is reached through its own interface), every interface in LAN mode.
 */
function listenHost(env: Env, lan: boolean): string {
  const host = read(env, 'HOST') ?? (lan || read(env, 'DATABASE_URL') !== undefined ? '0.0.0.0' : '127.0.0.1');
  if (!isIP(host) && host !== 'localhost') throw new ConfigError('HOST must be an IP address (127.0.0.1, 0.0.0.0, ::) or localhost');
  return host;
}

function lanBaseUrl(lan: { address: string | null } | undefined, port: number): string | null {
  if (!lan) return null;
  if (!lan.address) throw new ConfigError('--lan: this machine has no address on a local network; set PUBLIC_BASE_URL (and HOST)');
  return `http://${lan.address}:${port}`;
}

function logFormat(env: Env, name: string): LogFormat | null {
  const raw = read(env, name);
  if (raw === undefined) return null;
  if (raw !== 'pretty' && raw !== 'json') throw new ConfigError(`${name} must be pretty or json`);
  return raw;
}

function list(env: Env, name: string): string[] {
  return (read(env, name) ?? '').split(',').map((item) => item.trim()).filter(Boolean);
}

/** A secret from the environment, or one generated once and kept under the data directory. */
function secret(env: Env, name: string, dataDir: string, minLength = 32): string {
  const given = read(env, name);
  if (given !== undefined) {
    if (given.length < minLength) throw new ConfigError(`${name} must be at least ${minLength} characters`);
    return given;
  }
  const file = path.join(dataDir, 'secrets.json');
  const stored: Record<string, string> = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : {};
  if (!stored[name]) {
    stored[name] = randomBytes(32).toString('base64url');
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(file, JSON.stringify(stored, null, 2), { mode: 0o600 });
  }
  return stored[name];
}

/**
 * `lan`: LAN mode (`npm start -- --lan`, main.ts): the service listens on every interface and is
 * announced at this machine's address on the local network, unless HOST and PUBLIC_BASE_URL say otherwise.
 */
export function loadConfig(env: Env = process.env, options: { lan?: { address: string | null } } = {}) {
  const port = integer(env, 'PORT', 8080, 0, 65535);
  const dataDir = path.resolve(text(env, 'DATA_DIR', '.data'));
  const host = listenHost(env, options.lan !== undefined);
  const publicBaseUrl = url(env, 'PUBLIC_BASE_URL') ?? lanBaseUrl(options.lan, port) ?? listenerUrl(host, port);
  const s3Endpoint = url(env, 'S3_ENDPOINT');
  return {
    port,
    host,
    /**
     * Null: off. A second listener speaking HTTP/2 over cleartext (h2c, prior knowledge) for a load
     * balancer that talks HTTP/2 to its backends: many streams share one connection.
     */
    h2cPort: read(env, 'H2C_PORT') === undefined ? null : integer(env, 'H2C_PORT', 0, 0, 65535),
    publicBaseUrl,
    linkBase: url(env, 'LINK_BASE') ?? publicBaseUrl,
    /** Where the browser pages send the user back to the app (referral, payment return and fail). */
    appLinkBase: appLinkBase(env, 'APP_LINK_BASE', 'effectsapp://'),
    dataDir,
    logLevel: text(env, 'LOG_LEVEL', 'info'),
    /** Null: pretty on a terminal, JSON otherwise (`logFormatFor` of common/logger.ts). */
    logFormat: logFormat(env, 'LOG_FORMAT'),
    trustProxy: flag(env, 'TRUST_PROXY', false),
    jsonBodyLimitBytes: integer(env, 'JSON_BODY_LIMIT_BYTES', 1024 * 1024, 1024),
    shutdownTimeoutMs: integer(env, 'SHUTDOWN_TIMEOUT_MS', 20_000, 1000),
    /** The longest a client may take to send one request (headers and body); then 408. */
    requestTimeoutMs: integer(env, 'REQUEST_TIMEOUT_MS', 60_000, 100, 3_600_000),

    databaseUrl: url(env, 'DATABASE_URL'),
    /** Null: 54329, or the free port picked once when that was taken (remembered under DATA_DIR). */
    embeddedPostgresPort: read(env, 'EMBEDDED_PG_PORT') === undefined ? null : integer(env, 'EMBEDDED_PG_PORT', 0, 1, 65535),
    databasePoolSize: integer(env, 'DATABASE_POOL_SIZE', 10, 1, 200),

    s3: s3Endpoint
      ? {
          endpoint: s3Endpoint,
          accessKey: text(env, 'S3_ACCESS_KEY', ''),
          secretKey: text(env, 'S3_SECRET_KEY', ''),
          bucket: text(env, 'S3_BUCKET', 'media'),
          region: text(env, 'S3_REGION', 'us-east-1'),
        }
      : null,
    /**
     * The origin presigned links and public media URLs are made for. Unset: S3_ENDPOINT's with a
     * configured store; PUBLIC_BASE_URL's in the embedded default, whose store the web role serves.
     */
    s3PublicUrl: origin(env, 'S3_PUBLIC_URL'),
    embeddedS3Port: integer(env, 'EMBEDDED_S3_PORT', 0, 0, 65535),

    payments: paymentSettings(env, dataDir),
    /**
     * One billing day in seconds: subscription periods, renewal retries
     * and reminders are counted in them, so a demo or a test can run a month in a minute.
     */
    billingDayS: integer(env, 'BILLING_DAY_S', 86_400, 1),

    tokenSecret: secret(env, 'TOKEN_SECRET', dataDir),
    accessTokenTtlS: integer(env, 'ACCESS_TOKEN_TTL_S', 900, 1),
    refreshTokenTtlS: integer(env, 'REFRESH_TOKEN_TTL_S', 2_592_000, 1),

    guestStartCredits: integer(env, 'GUEST_START_CREDITS', 100),
    welcomeCredits: integer(env, 'WELCOME_CREDITS', 50),
    referralBonus: integer(env, 'REFERRAL_BONUS', 50),
    guestRetentionDays: integer(env, 'GUEST_RETENTION_DAYS', 30, 1),
    avatarMaxBytes: integer(env, 'AVATAR_MAX_BYTES', 10 * 1024 * 1024, 1024),

    // Token buckets (burst = capacity, refilled at perMinute) and the login lock and guard.
    rateLimits: {
      auth: { burst: integer(env, 'RATE_AUTH_BURST', 100, 1), perMinute: integer(env, 'RATE_AUTH_PER_MINUTE', 60, 1) },
      write: { burst: integer(env, 'RATE_WRITE_BURST', 120, 1), perMinute: integer(env, 'RATE_WRITE_PER_MINUTE', 60, 1) },
      read: { burst: integer(env, 'RATE_READ_BURST', 600, 1), perMinute: integer(env, 'RATE_READ_PER_MINUTE', 300, 1) },
      voice: { burst: integer(env, 'RATE_VOICE_BURST', 10, 1), perMinute: integer(env, 'RATE_VOICE_PER_MINUTE', 10, 1) },
      loginLock: {
        failures: integer(env, 'LOGIN_LOCK_FAILURES', 10, 1),
        windowS: integer(env, 'LOGIN_LOCK_WINDOW_S', 900, 1),
        lockS: integer(env, 'LOGIN_LOCK_S', 900, 1),
      },
      loginGuard: {
        failures: integer(env, 'LOGIN_GUARD_FAILURES', 50, 1),
        windowS: integer(env, 'LOGIN_GUARD_WINDOW_S', 3600, 1),
        guardS: integer(env, 'LOGIN_GUARD_S', 3600, 1),
      },
    },

    idp: {
      timeoutMs: integer(env, 'IDP_TIMEOUT_MS', 4000, 1),
      a: { issuer: optionalText(env, 'IDP_A_ISSUER'), audiences: list(env, 'IDP_A_AUDIENCE'), jwksUrl: url(env, 'IDP_A_JWKS_URL') },
      b: {
        issuer: optionalText(env, 'IDP_B_ISSUER'),
        audiences: list(env, 'IDP_B_AUDIENCE'),
        jwksUrl: url(env, 'IDP_B_JWKS_URL'),
        tokenUrl: url(env, 'IDP_B_TOKEN_URL'),
        revokeUrl: url(env, 'IDP_B_REVOKE_URL'),
        clientId: optionalText(env, 'IDP_B_CLIENT_ID'),
        clientSecret: optionalText(env, 'IDP_B_CLIENT_SECRET'),
      },
      c: { userinfoUrl: url(env, 'IDP_C_USERINFO_URL') },
      d: { userinfoUrl: url(env, 'IDP_D_USERINFO_URL'), clientId: optionalText(env, 'IDP_D_CLIENT_ID') },
    },

    providerUrl: url(env, 'PROVIDER_URL'),
    simProviderLatencyMs: integer(env, 'SIM_PROVIDER_LATENCY_MS', 1500),
    simProviderPort: integer(env, 'SIM_PROVIDER_PORT', 0, 0, 65535),
    simProviderFailureRate: fraction(env, 'SIM_PROVIDER_FAILURE_RATE', 0),
    simProviderConcurrency: integer(env, 'SIM_PROVIDER_CONCURRENCY', 4, 1),
    /** How long a transcription may take at the provider before it is `503 provider_unavailable`. */
    speechDeadlineMs: integer(env, 'SPEECH_DEADLINE_MS', 15_000, 100, 120_000),
    /**
     * Voice input on an OpenAI-compatible service (`POST {url}/audio/transcriptions`, the base URL with
     * its version, as https://api.openai.com/v1). Null url: the provider's own endpoint (PROVIDER_URL).
     */
    transcription: {
      url: url(env, 'TRANSCRIPTION_URL'),
      model: text(env, 'TRANSCRIPTION_MODEL', 'whisper-1'),
      apiKey: optionalText(env, 'TRANSCRIPTION_API_KEY'),
    },
    generations: generationSettings(env),
    marketplace: marketplaceSettings(env),
    // Where the provider calls back when a task finishes (the web role serves it): the slot is handed
    // on at once instead of at the next poll; polling stays for lost callbacks.
    providerCallbackBaseUrl: url(env, 'PROVIDER_CALLBACK_BASE_URL') ?? publicBaseUrl,
    providerApis: providerApis(env),

    // SSE streams: at most `capPerUser` open at once per user across every stream kind and web
    // process; each holds a lease row renewed every `heartbeatS` (with a `: ping` comment) that lapses
    // `leaseS` after its process stops renewing it (a crashed process frees its users' slots).
    streams: {
      capPerUser: integer(env, 'STREAM_CAP_PER_USER', 5, 1, 1000),
      heartbeatS: integer(env, 'STREAM_HEARTBEAT_S', 15, 1, 300),
      leaseS: integer(env, 'STREAM_LEASE_S', 45, 2, 3600),
    },

    push: pushSettings(env),

    // The circuit of each outside service (payment processor, identity providers, push gateways;
    // `common/circuit.ts`): this many failures in a row open it, then a probe goes after a pause
    // that doubles per failed probe up to the maximum, with jitter.
    circuits: {
      failures: integer(env, 'CIRCUIT_FAILURES', 5, 1, 1000),
      pause: { baseMs: integer(env, 'CIRCUIT_PAUSE_MS', 5000, 1, 3_600_000), capMs: integer(env, 'CIRCUIT_MAX_PAUSE_MS', 60_000, 1, 3_600_000) },
    },

    // `GET /metrics`: open on the main port by default; a bearer token and/or a port of its own.
    metrics: {
      token: optionalText(env, 'METRICS_TOKEN'),
      port: read(env, 'METRICS_PORT') === undefined ? null : integer(env, 'METRICS_PORT', 0, 0, 65535),
    },

    ops: opsSettings(env, dataDir),

    catalog: {
      seedDemo: flag(env, 'SEED_DEMO_CATALOG', true),
      newEffectSlots: integer(env, 'CATALOG_NEW_EFFECT_SLOTS', 3, 0, 100),
      newEffectDays: integer(env, 'CATALOG_NEW_EFFECT_DAYS', 14, 0, 365),
      complaintDemoteThreshold: integer(env, 'COMPLAINT_DEMOTE_THRESHOLD', 3, 1),
      complaintMinAccountAgeDays: integer(env, 'COMPLAINT_MIN_ACCOUNT_AGE_DAYS', 7, 0),
      thematicSearch: flag(env, 'THEMATIC_SEARCH', false),
      // The cache of catalog answers (api/catalog/catalog-cache.ts): every change drops it at once;
      // this bounds how long popularity (success counts, which bump no version) may lag.
      cacheTtlMs: integer(env, 'CATALOG_CACHE_TTL_S', 60, 0, 86_400) * 1000,
      cacheBytes: integer(env, 'CATALOG_CACHE_MB', 64, 0, 65_536) * 1024 * 1024,
      // Cache-Control max-age of catalog answers for clients and CDNs; 0: store, but revalidate (ETag) every time.
      httpMaxAgeS: integer(env, 'CATALOG_HTTP_MAX_AGE_S', 0, 0, 86_400),
    },
  };
}

/**
 * Payments and the processor. Without PAYMENT_PROCESSOR_URL the built-in simulator is mounted on the
 * web app at `/sim/processor` and the service talks to it over HTTP like to the real processor.
 */
function paymentSettings(env: Env, dataDir: string) {
  const processorUrl = url(env, 'PAYMENT_PROCESSOR_URL');
  const login = optionalText(env, 'PAYMENT_PROCESSOR_LOGIN');
  const password = optionalText(env, 'PAYMENT_PROCESSOR_PASSWORD');
  if (processorUrl && (!login || !password)) {
    throw new ConfigError('PAYMENT_PROCESSOR_LOGIN and PAYMENT_PROCESSOR_PASSWORD are required with PAYMENT_PROCESSOR_URL');
  }
  return {
    enabled: flag(env, 'PAYMENTS_ENABLED', true),
    /** Null: the simulator at `{PUBLIC_BASE_URL}/sim/processor`. */
    processorUrl,
    processorLogin: login ?? 'simulator-merchant',
    // The simulator's operator actions (refund, expire, ...) need it: generated, not a known default.
    processorPassword: password ?? secret(env, 'PAYMENT_PROCESSOR_PASSWORD', dataDir),
    notificationSecret: secret(env, 'PAYMENT_NOTIFICATION_SECRET', dataDir),
    registerTimeoutMs: integer(env, 'PAYMENT_REGISTER_TIMEOUT_MS', 8000, 1, 60_000),
    statusTimeoutMs: integer(env, 'PAYMENT_STATUS_TIMEOUT_MS', 5000, 1, 60_000),
    /** How long the processor keeps an order's payment page open; the payment expires with it. */
    sessionTimeoutS: integer(env, 'PAYMENT_SESSION_TIMEOUT_S', 1800, 60, 86_400),
    refreshMinIntervalS: integer(env, 'PAYMENT_REFRESH_MIN_INTERVAL_S', 5, 0),
    reconcileFirstCheckS: integer(env, 'PAYMENT_RECONCILE_FIRST_CHECK_S', 60, 0),
    reconcileIntervalS: integer(env, 'PAYMENT_RECONCILE_INTERVAL_S', 120, 0),
    lateCheckIntervalS: integer(env, 'PAYMENT_LATE_CHECK_INTERVAL_S', 600, 0),
    lateWatchS: integer(env, 'PAYMENT_LATE_WATCH_S', 10_800, 0),
    chargebackCheckIntervalS: integer(env, 'PAYMENT_CHARGEBACK_CHECK_INTERVAL_S', 21_600, 0),
    chargebackWatchDays: integer(env, 'PAYMENT_CHARGEBACK_WATCH_DAYS', 45, 0),
    reconcileBatch: integer(env, 'PAYMENT_RECONCILE_BATCH', 200, 1, 10_000),
    seedShowcase: flag(env, 'SEED_DEMO_CATALOG', true),
  };
}

/**
 * The operator console at `/ops` (README "Operators"), behind HTTP Basic with OPS_USER and
 * OPS_PASSWORD. In the embedded default (no DATABASE_URL) a password is generated once, kept under
 * the data directory and printed in the start log; beside a configured database one must be set,
 * else the console stays closed (every `/ops` path answers 401).
 */
function opsSettings(env: Env, dataDir: string) {
  const given = read(env, 'OPS_PASSWORD') !== undefined;
  const embedded = read(env, 'DATABASE_URL') === undefined;
  return {
    user: text(env, 'OPS_USER', 'operator'),
    password: given || embedded ? secret(env, 'OPS_PASSWORD', dataDir, 16) : null,
    /** Generated here (not configured): the start log prints it. */
    passwordGenerated: !given && embedded,
  };
}

/**
 * Push gateways (README "Push"). Each is configured or not on its own; an unconfigured platform
 * keeps the log-only sender. Keys are parsed here, so a broken key stops the start, not a job.
 */
function pushSettings(env: Env) {
  return {
    fcm: fcmSettings(env),
    apns: apnsSettings(env),
    /** Tries of one message inside a sender before the job fails and pg-boss retries it later. */
    attempts: integer(env, 'PUSH_ATTEMPTS', 3, 1, 10),
    retryBaseMs: integer(env, 'PUSH_RETRY_BASE_MS', 500, 0, 60_000),
    /** A longer wait (a gateway's Retry-After) is left to the job's own retry. */
    maxRetryWaitMs: integer(env, 'PUSH_MAX_RETRY_WAIT_MS', 10_000, 0, 600_000),
    timeoutMs: integer(env, 'PUSH_TIMEOUT_MS', 10_000, 100, 120_000),
  };
}

/** A value given inline or as a file path (`NAME` or `NAME_FILE`), or null when neither is set. */
function inlineOrFile(given: { inline: string | null; file: string | null }, name: string): string | null {
  if (given.inline !== null && given.file !== null) throw new ConfigError(`set ${name} or ${name}_FILE, not both`);
  if (given.file === null) return given.inline;
  try {
    return readFileSync(given.file, 'utf8');
  } catch {
    throw new ConfigError(`${name}_FILE must name a readable file`);
  }
}

function privateKey(pem: string, name: string, type: 'rsa' | 'ec'): KeyObject {
  try {
    // Keys pasted into one environment line often carry literal "\n" for their line breaks.
    const key = createPrivateKey(pem.includes('\\n') ? pem.replace(/\\n/g, '\n') : pem);
    if (key.asymmetricKeyType === type && (type === 'rsa' || key.asymmetricKeyDetails?.namedCurve === 'prime256v1')) return key;
  } catch {
    // reported below
  }
  throw new ConfigError(`${name} must hold a PEM ${type === 'rsa' ? 'RSA' : 'EC P-256'} private key`);
}

/** FCM HTTP v1: a Google service account (its JSON key file) with the Firebase messaging scope. */
function fcmSettings(env: Env) {
  const json = inlineOrFile({ inline: optionalText(env, 'FCM_SERVICE_ACCOUNT_JSON'), file: optionalText(env, 'FCM_SERVICE_ACCOUNT_JSON_FILE') }, 'FCM_SERVICE_ACCOUNT_JSON');
  if (json === null) return null;
  let account: Record<string, unknown>;
  try {
    account = JSON.parse(json);
  } catch {
    throw new ConfigError('FCM_SERVICE_ACCOUNT_JSON must be the JSON key of a service account');
  }
  const field = (key: string) => (typeof account[key] === 'string' && account[key] ? (account[key] as string) : null);
  const projectId = optionalText(env, 'FCM_PROJECT_ID') ?? field('project_id');
  const clientEmail = field('client_email');
  const key = field('private_key');
  if (!projectId || !clientEmail || !key) {
    throw new ConfigError('FCM_SERVICE_ACCOUNT_JSON must hold client_email, private_key and project_id (or set FCM_PROJECT_ID)');
  }
  return {
    projectId,
    clientEmail,
    privateKey: privateKey(key, 'FCM_SERVICE_ACCOUNT_JSON private_key', 'rsa'),
    tokenUri: field('token_uri') ?? 'https://oauth2.googleapis.com/token',
  };
}

/** APNs token-based authentication: a .p8 signing key with its key id, the team id, the app's bundle id. */
function apnsSettings(env: Env) {
  const key = inlineOrFile({ inline: optionalText(env, 'APNS_KEY'), file: optionalText(env, 'APNS_KEY_FILE') }, 'APNS_KEY');
  const keyId = optionalText(env, 'APNS_KEY_ID');
  const teamId = optionalText(env, 'APNS_TEAM_ID');
  const topic = optionalText(env, 'APNS_TOPIC');
  const environment = text(env, 'APNS_ENVIRONMENT', 'production') as 'production' | 'sandbox';
  if (environment !== 'production' && environment !== 'sandbox') throw new ConfigError('APNS_ENVIRONMENT must be production or sandbox');
  if (key === null && !keyId && !teamId && !topic) return null;
  if (key === null || !keyId || !teamId || !topic) {
    throw new ConfigError('APNs needs APNS_KEY (or APNS_KEY_FILE), APNS_KEY_ID, APNS_TEAM_ID and APNS_TOPIC together');
  }
  return { keyId, teamId, topic, environment, privateKey: privateKey(key, 'APNS_KEY', 'ec') };
}

/**
 * One provider kind's accounts: `token:slots,token:slots`. The LAST colon of an item separates the
 * slots, so a token may itself contain `:` (a fal key is `key_id:key_secret`). Error messages never
 * repeat a token.
 */
function accountList(env: Env, name: string, kind: ProviderKind): { kind: ProviderKind; apiKey: string; slots: number }[] {
  return list(env, name).map((item) => {
    const at = item.lastIndexOf(':');
    const slots = Number(item.slice(at + 1));
    if (at <= 0 || !/^\d+$/.test(item.slice(at + 1)) || slots < 1 || slots > 1000) {
      throw new ConfigError(`${name} must be a list of key:slots with 1..1000 slots`);
    }
    const apiKey = item.slice(0, at);
    if (kind === 'fal' && !/^[^:]+:[^:]+$/.test(apiKey)) throw new ConfigError(`${name} must be a list of key_id:key_secret:slots`);
    return { kind, apiKey, slots };
  });
}

/**
 * The pool's accounts of every kind: `PROVIDER_ACCOUNTS` (the simulator's), `REPLICATE_ACCOUNTS`
 * (API tokens), `FAL_ACCOUNTS` (keys). The simulator's two default accounts apply only when no
 * account of any kind is configured: configuring a real provider alone runs nothing on the simulator.
 */
function providerAccounts(env: Env): { kind: ProviderKind; apiKey: string; slots: number }[] {
  const accounts = [
    ...accountList(env, 'PROVIDER_ACCOUNTS', 'simulator'),
    ...accountList(env, 'REPLICATE_ACCOUNTS', 'replicate'),
    ...accountList(env, 'FAL_ACCOUNTS', 'fal'),
  ];
  if (new Set(accounts.map((account) => account.apiKey)).size !== accounts.length) {
    throw new ConfigError('PROVIDER_ACCOUNTS, REPLICATE_ACCOUNTS and FAL_ACCOUNTS list a key twice');
  }
  if (accounts.length) return accounts;
  return [{ kind: 'simulator', apiKey: 'sim-account-1', slots: 4 }, { kind: 'simulator', apiKey: 'sim-account-2', slots: 4 }];
}

/** `PROVIDER_KIND_ORDER`: provider kinds, most preferred first; the real providers before the simulator by default. */
function kindOrder(env: Env, name: string): ProviderKind[] {
  const kinds = list(env, name);
  if (!kinds.length) return ['replicate', 'fal', 'simulator'];
  if (!kinds.every(isProviderKind) || new Set(kinds).size !== kinds.length) {
    throw new ConfigError(`${name} must list provider kinds (${providerKinds.join(', ')}), each at most once`);
  }
  return kinds;
}

/** `whsec_<base64>` secrets, comma-separated: Replicate's webhook signing secrets (`GET /webhooks/default/secret`). */
function webhookSecrets(env: Env, name: string): string[] {
  const secrets = list(env, name);
  if (!secrets.every((secret) => /^whsec_[A-Za-z0-9+/]+={0,2}$/.test(secret))) throw new ConfigError(`${name} must list whsec_<base64> secrets`);
  return secrets;
}

/**
 * Where the hosted-inference APIs are and how long their calls may take (`clients/providers/replicate.ts`,
 * `fal.ts`), and how their webhooks are checked (`api/generations/task-callback.ts`). The defaults are
 * the providers' own addresses; tests and the simulator's modes point them at `simulators/providers/`.
 */
function providerApis(env: Env) {
  return {
    replicate: {
      baseUrl: url(env, 'REPLICATE_API_URL') ?? 'https://api.replicate.com/v1',
      /** Empty: each account's secret is read from the API once and kept (`GET /webhooks/default/secret`). */
      webhookSecrets: webhookSecrets(env, 'REPLICATE_WEBHOOK_SECRETS'),
      /**
       * How far back `findTask` reads an account's predictions for a lost submission's; it must be
       * longer than PENDING_TIMEOUT_S (the longest a submission stays unresolved).
       */
      lookupWindowS: integer(env, 'REPLICATE_LOOKUP_WINDOW_S', 3600, 60, 86_400),
    },
    fal: {
      queueUrl: url(env, 'FAL_QUEUE_URL') ?? 'https://queue.fal.run',
      restUrl: url(env, 'FAL_REST_URL') ?? 'https://rest.fal.ai',
      jwksUrl: url(env, 'FAL_JWKS_URL') ?? 'https://rest.alpha.fal.ai/.well-known/jwks.json',
    },
    /** A webhook signed longer ago (or further ahead) than this is refused: a replay outside it cannot pass. */
    webhookToleranceS: integer(env, 'PROVIDER_WEBHOOK_TOLERANCE_S', 300, 1, 3600),
    /** One API call (submit, poll, lookup, cancel, file upload) without an answer this long is `unavailable`. */
    callTimeoutMs: integer(env, 'PROVIDER_CALL_TIMEOUT_MS', 15_000, 100, 600_000),
    /** A result file's download. */
    resultTimeoutMs: integer(env, 'PROVIDER_RESULT_TIMEOUT_MS', 60_000, 100, 3_600_000),
  };
}

/**
 * The generation pipeline: provider accounts and their slots, waiting budgets, leases and the
 * pacing of the dispatcher and the poll loop. The lease must outlast a poll claim plus the longest
 * poll interval (SLOT_LEASE_S > POLL_CLAIM_S + POLL_MAX_INTERVAL_MS), else a slow poll loses its slot.
 */
function generationSettings(env: Env) {
  const settings = {
    providerAccounts: providerAccounts(env),
    /** A task goes to the first of these kinds that its effect names a route for and that has an account (`pool/model-routes.ts`). */
    providerKindOrder: kindOrder(env, 'PROVIDER_KIND_ORDER'),
    pendingTimeoutS: integer(env, 'PENDING_TIMEOUT_S', 900, 1),
    providerTimeoutS: integer(env, 'PROVIDER_TIMEOUT_S', 3600, 1),
    /** The provider keeps uploaded files (`POST /v1/files`): the photos of generations waiting for a slot are staged there. */
    providerFileStore: flag(env, 'PROVIDER_FILE_STORE', true),
    slotLeaseS: integer(env, 'SLOT_LEASE_S', 60, 1, 3600),
    pollClaimS: integer(env, 'POLL_CLAIM_S', 30, 1, 3600),
    pollMinIntervalMs: integer(env, 'POLL_MIN_INTERVAL_MS', 100, 10),
    pollMaxIntervalMs: integer(env, 'POLL_MAX_INTERVAL_MS', 5000, 10),
    /** While the provider's task callbacks arrive, tasks are polled after 1/3 of their run so far, at least this far apart. */
    callbackFallbackPollMinMs: integer(env, 'CALLBACK_FALLBACK_POLL_MIN_MS', 1000, 10),
    /** Callbacks count as arriving for this long after the last one; 0 polls every task densely. */
    callbackTrustS: integer(env, 'CALLBACK_TRUST_S', 30, 0, 86_400),
    pollBatch: integer(env, 'POLL_BATCH', 100, 1, 10_000),
    /**
     * A call that the provider does not answer (a timeout, a cut connection, a 5xx) is tried again on
     * that account after a backoff doubling from the base to the cap, with jitter; this many in a row
     * open the account's circuit: no submission to it, its polls deferred, one probe per backoff.
     */
    providerRetry: {
      baseMs: integer(env, 'PROVIDER_RETRY_BASE_MS', 500, 10, 60_000),
      capMs: integer(env, 'PROVIDER_RETRY_CAP_MS', 10_000, 10, 600_000),
      circuitFailures: integer(env, 'PROVIDER_CIRCUIT_FAILURES', 5, 1, 1000),
    },
    pollConcurrency: integer(env, 'POLL_CONCURRENCY', 16, 1, 1000),
    dispatchTickMs: integer(env, 'DISPATCH_TICK_MS', 250, 10, 60_000),
    submitConcurrency: integer(env, 'SUBMIT_CONCURRENCY', 16, 1, 1000),
    mediaConcurrency: integer(env, 'MEDIA_CONCURRENCY', 2, 1, 64),
    mediaTimeoutS: integer(env, 'MEDIA_TIMEOUT_S', 600, 1),
    maxQueuedGenerations: integer(env, 'MAX_QUEUED_GENERATIONS', 100_000, 1),
    resultUrlTtlS: integer(env, 'RESULT_URL_TTL_S', 3600, 60, 7 * 24 * 3600),
  };
  if (settings.slotLeaseS * 1000 <= settings.pollClaimS * 1000 + settings.pollMaxIntervalMs) {
    throw new ConfigError('SLOT_LEASE_S must be longer than POLL_CLAIM_S plus POLL_MAX_INTERVAL_MS');
  }
  return settings;
}

type ModelRoutes = Partial<Record<ProviderKind, ModelRoute>>;

/**
 * A route per provider kind (docs/providers.md), as JSON inline or in a file (`NAME_FILE`), checked
 * at start as the catalog import checks an effect's `runs`; unset, `fallback` (the simulator's).
 */
function modelRoutes(given: { inline: string | null; file: string | null }, name: string, fallback: ModelRoutes, task: RouteTask): ModelRoutes {
  const text = inlineOrFile(given, name);
  if (text === null) return fallback;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ConfigError(`${name} must be JSON: a route per provider kind, such as {"replicate": {"model": "owner/name", "input": {...}}}`);
  }
  const problems = modelRoutesProblems(value, task);
  if (problems.length) throw new ConfigError(`${name}: ${problems.map((problem) => `${problem.path.join('.') || 'the value'} ${problem.message}`).join('; ')}`);
  return value as ModelRoutes;
}

/** A user effect's generation: up to four people (as an effect's `characters`), a photo always, the author's prompt. */
const userEffectTask: RouteTask = { persons: 4, photos: true };

/**
 * The marketplace of user effects (README, its own section): the submission limits (wall-clock seconds),
 * the author's share and when it settles (billing days, section 7.0), the moderation jobs, and what
 * runs the marketplace on each provider kind.
 */
function marketplaceSettings(env: Env) {
  return {
    /** What reads a round's texts and sample photo and answers the verdict; the slot is leased on the kind it runs on. */
    moderationRuns: modelRoutes(
      { inline: optionalText(env, 'MODERATION_RUNS'), file: optionalText(env, 'MODERATION_RUNS_FILE') }, 'MODERATION_RUNS',
      { simulator: { model: 'moderation' } }, { persons: 1, photos: true },
    ),
    /** What runs a generation with a user effect, by its output type: its catalog effect keeps these routes (db/user-effects/catalog-effect.ts). */
    userEffectRuns: {
      image: modelRoutes(
        { inline: optionalText(env, 'USER_EFFECT_IMAGE_RUNS'), file: optionalText(env, 'USER_EFFECT_IMAGE_RUNS_FILE') }, 'USER_EFFECT_IMAGE_RUNS',
        { simulator: { model: 'image' } }, userEffectTask,
      ),
      video: modelRoutes(
        { inline: optionalText(env, 'USER_EFFECT_VIDEO_RUNS'), file: optionalText(env, 'USER_EFFECT_VIDEO_RUNS_FILE') }, 'USER_EFFECT_VIDEO_RUNS',
        { simulator: { model: 'video' } }, userEffectTask,
      ),
    },
    /** At most this many of an author's user effects wait for moderation (429 without Retry-After). */
    maxProcessing: integer(env, 'USER_EFFECTS_MAX_PROCESSING', 3, 1),
    /** After a rejection, submissions wait this long (429 with Retry-After). */
    rejectionCooldownS: integer(env, 'USER_EFFECTS_REJECTION_COOLDOWN_S', 600, 0),
    /** This many rejections within `lockWindowS` lock submissions for `lockS` (429 with Retry-After). */
    lockRejections: integer(env, 'USER_EFFECTS_LOCK_REJECTIONS', 3, 1),
    lockWindowS: integer(env, 'USER_EFFECTS_LOCK_WINDOW_S', 86_400, 1),
    lockS: integer(env, 'USER_EFFECTS_LOCK_S', 86_400, 1),
    /** The author's share of another user's generation, in percent, rounded down. */
    authorSharePercent: integer(env, 'AUTHOR_SHARE_PERCENT', 20, 0, 100),
    /** Billing days from an earning to its settlement. */
    settleBillingDays: integer(env, 'EARNINGS_SETTLE_DAYS', 7, 0),
    /** Moderation rounds run at once per worker process. */
    moderationConcurrency: integer(env, 'MODERATION_CONCURRENCY', 4, 1, 256),
    /** How long one round waits for the moderation model before its job tries again. */
    moderationDeadlineS: integer(env, 'MODERATION_DEADLINE_S', 300, 1),
  };
}

export type Config = ReturnType<typeof loadConfig>;
