import '../process/runtime-check';
import { loadEnvFileIfPresent } from '../process/env-file';
import { parseArgs } from 'node:util';
import { ReplaySelectionError, replayFailed, type ReplayOptions, type ReplayOutcome } from '../services/generations/replay-failed';
import { loadConfig } from '../config';
import { createScriptLogger } from '../common/logger';
import { startInfrastructure } from '../process/infrastructure';
import { runOperatorScript, UsageError } from './operator';

const usage = `Re-runs failed generations as NEW generations (the failed ones stay as they are, refunded).

usage: npm run replay-failed -- [--id <uuid>]... [--error-code <code>] [--since <time>] [--until <time>] [--limit <n>] [--apply]

  --id <uuid>          a failed generation (repeatable)
  --error-code <code>  failed generations with this error_code (provider_error, pool_timeout, ...)
  --since <time>       failed at or after this time (ISO 8601, e.g. 2026-11-23T10:00:00Z)
  --until <time>       failed before this time
  --limit <n>          at most n generations (default 1000)
  --apply              do it; without it nothing changes and the run only says what it would do
  --help               this text

At least one of --id, --error-code, --since is required. Each replay reserves the effect's (or studio
category's) CURRENT cost from the user (skipped, and named, when they cannot pay), with the same photos
(and prompt), in one transaction that also records the replay on the failed generation: a failed
generation is replayed at most once, and a dry run lists the ones already replayed with their new id.
A generation its owner cancelled is never replayed.`;

function describe(outcome: ReplayOutcome): string {
  const target = outcome.newId ? ` -> ${outcome.newId}` : '';
  return `${outcome.action.padEnd(12)} ${outcome.failedId} (user ${outcome.userId})${target}${outcome.reason ? `: ${outcome.reason}` : ''}`;
}

/** The options of a command line, or null for `--help`; a mistake is a UsageError. */
function parseReplayArguments(argv: string[]): ReplayOptions | null {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        id: { type: 'string', multiple: true, default: [] },
        'error-code': { type: 'string' },
        since: { type: 'string' },
        until: { type: 'string' },
        limit: { type: 'string', default: '1000' },
        apply: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (values.help) return null;
  const time = (text: string | undefined) => {
    if (text === undefined) return null;
    const parsed = new Date(text);
    if (Number.isNaN(parsed.getTime())) throw new UsageError(`not a time: ${text}`);
    return parsed;
  };
  if (!/^[1-9]\d{0,6}$/.test(values.limit!)) throw new UsageError(`--limit must be a positive whole number: ${values.limit}`);
  const options: ReplayOptions = {
    ids: values.id ?? [],
    errorCode: values['error-code'] ?? null,
    since: time(values.since),
    until: time(values.until),
    limit: Number(values.limit),
    apply: values.apply ?? false,
  };
  if (!options.ids.length && !options.errorCode && !options.since) throw new UsageError('name the generations: --id, --error-code or --since');
  return options;
}

async function main(): Promise<void> {
  const options = parseReplayArguments(process.argv.slice(2));
  if (!options) {
    console.log(usage);
    return;
  }
  loadEnvFileIfPresent();
  const config = loadConfig();
  const log = createScriptLogger(config.logLevel);
  const infrastructure = await startInfrastructure({ ...config, catalog: { ...config.catalog, seedDemo: false } }, log, { supervise: false, schedule: false });
  try {
    const outcomes = await replayFailed(infrastructure.services, options);
    for (const outcome of outcomes) console.log(describe(outcome));
    const count = (action: ReplayOutcome['action']) => outcomes.filter((outcome) => outcome.action === action).length;
    console.log(options.apply
      ? `${count('replayed')} replayed, ${count('already replayed')} already replayed before, ${count('skipped')} skipped`
      : `dry run: ${count('would replay')} would be replayed, ${count('already replayed')} already replayed, ${count('skipped')} skipped; add --apply to do it`);
  } finally {
    await infrastructure.stop();
  }
}

if (require.main === module) runOperatorScript('replay-failed', main, { usage: [ReplaySelectionError], help: true });
