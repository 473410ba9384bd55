import path from 'node:path';
import { startAddressLines } from '../common/addresses';

/** What the start of a web process tells the person who started it. */
export interface StartFacts {
  publicBaseUrl: string;
  host: string;
  port: number;
  ops: { user: string; password: string | null; passwordGenerated: boolean };
  dataDir: string;
  /** The embedded Postgres's port; null beside a configured DATABASE_URL. */
  embeddedPostgresPort: number | null;
  /** The embedded object store (under DATA_DIR), not the one of S3_ENDPOINT. */
  embeddedStore: boolean;
  /** The simulators this process runs, each with the variable that would replace it. */
  simulators: string[];
}

/**
 * The block the start prints once the web role listens, one fact a line, in the order a mobile
 * developer needs them: the API, its reference, the operator console and how to get in, the
 * addresses for phones and emulators, where the data lives, and what runs as a simulator.
 */
export function startSummaryLines(facts: StartFacts, options: { lan: boolean; qrCode: boolean }): string[] {
  const base = facts.publicBaseUrl;
  return [
    `API: ${base} (every path starts with /v1)`,
    `API reference: ${base}/docs (OpenAPI: ${base}/v1/openapi.json)`,
    `Operator console: ${base}/ops, ${consoleAccess(facts)}`,
    ...startAddressLines(facts, options),
    `Data: ${dataPlaces(facts)}`,
    `Simulators: ${facts.simulators.length ? facts.simulators.join(', ') : 'none'}`,
  ];
}

function consoleAccess({ ops, dataDir }: StartFacts): string {
  if (ops.password === null) return 'closed (OPS_PASSWORD is not set)';
  // The generated password is printed: it exists only in the embedded default, on the developer's machine.
  if (ops.passwordGenerated) return `user ${ops.user}, password ${ops.password} (generated once, kept in ${path.join(dataDir, 'secrets.json')})`;
  return `user ${ops.user}, password from OPS_PASSWORD`;
}

function dataPlaces({ dataDir, embeddedPostgresPort, embeddedStore }: StartFacts): string {
  const database = embeddedPostgresPort === null ? 'Postgres of DATABASE_URL' : `Postgres on port ${embeddedPostgresPort}`;
  const media = embeddedStore ? `media in ${path.join(dataDir, 's3')}` : 'media in the bucket of S3_ENDPOINT';
  const local = embeddedPostgresPort !== null || embeddedStore;
  return `${local ? `${dataDir} (DATA_DIR): ` : ''}${database}, ${media}`;
}
