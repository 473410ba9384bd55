import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

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

function list(env: Env, name: string): string[] {
  return (read(env, name) ?? '').split(',').map((item) => item.trim()).filter(Boolean);
}

/** A secret from the environment, or one generated once and kept under the data directory. */
function secret(env: Env, name: string, dataDir: string): string {
  const given = read(env, name);
  if (given !== undefined) {
    if (given.length < 32) throw new ConfigError(`${name} must be at least 32 characters`);
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

export function loadConfig(env: Env = process.env) {
  const port = integer(env, 'PORT', 8080, 0, 65535);
  const dataDir = path.resolve(text(env, 'DATA_DIR', '.data'));
  const publicBaseUrl = url(env, 'PUBLIC_BASE_URL') ?? `http://127.0.0.1:${port}`;
  const s3Endpoint = url(env, 'S3_ENDPOINT');
  return {
    port,
    publicBaseUrl,
    linkBase: url(env, 'LINK_BASE') ?? publicBaseUrl,
    dataDir,
    logLevel: text(env, 'LOG_LEVEL', 'info'),
    trustProxy: flag(env, 'TRUST_PROXY', false),
    jsonBodyLimitBytes: integer(env, 'JSON_BODY_LIMIT_BYTES', 1024 * 1024, 1024),
    shutdownTimeoutMs: integer(env, 'SHUTDOWN_TIMEOUT_MS', 20_000, 1000),

    databaseUrl: url(env, 'DATABASE_URL'),
    embeddedPostgresPort: integer(env, 'EMBEDDED_PG_PORT', 54329, 1, 65535),
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
    embeddedS3Port: integer(env, 'EMBEDDED_S3_PORT', 0, 0, 65535),

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

    catalog: {
      seedDemo: flag(env, 'SEED_DEMO_CATALOG', true),
      newEffectSlots: integer(env, 'CATALOG_NEW_EFFECT_SLOTS', 3, 0, 100),
      newEffectDays: integer(env, 'CATALOG_NEW_EFFECT_DAYS', 14, 0, 365),
      complaintDemoteThreshold: integer(env, 'COMPLAINT_DEMOTE_THRESHOLD', 3, 1),
      complaintMinAccountAgeDays: integer(env, 'COMPLAINT_MIN_ACCOUNT_AGE_DAYS', 7, 0),
      thematicSearch: flag(env, 'THEMATIC_SEARCH', false),
    },
  };
}

export type Config = ReturnType<typeof loadConfig>;
