import '../process/runtime-check';
import { loadEnvFileIfPresent } from '../process/env-file';
import { parseArgs } from 'node:util';
import { isUuid } from '../common/validation';
import { loadConfig } from '../config';
import { removalReason, removalReasonMaxLength, removeByOperator, type OperatorRemoval } from '../db/user-effects/remove-by-operator';
import { startInfrastructure } from '../process/infrastructure';
import { createLogger, flushLogs } from '../common/logger';

const usage = `Operator actions on user effects of the marketplace.

usage: npm run user-effects -- archive <user effect id> --reason <text>

  archive <id>     removes the user effect: archived, its catalog effect hidden from everyone, its
                   pending earnings reversed (settled ones stay), and the author told by push
  --reason <text>  why (kept on the user effect for the record; required, up to ${removalReasonMaxLength} characters)
  --help           this text

The operator console's Archive button (/ops/marketplace) calls the same function
(db/user-effects/remove-by-operator.ts).`;

/** A mistake in the command line: printed with the usage, never as a stack trace. */
export class UsageError extends Error {}

export interface ArchiveCommand {
  action: 'archive';
  userEffectId: string;
  reason: string;
}

const reasonProblems = {
  blank: 'archive needs --reason <text>',
  too_long: `--reason is longer than ${removalReasonMaxLength} characters`,
  nul: '--reason must not contain the NUL character',
};

/** The command of a command line, or null for `--help`; a mistake is a UsageError. */
export function parseUserEffectsArguments(argv: string[]): ArchiveCommand | null {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { reason: { type: 'string' }, help: { type: 'boolean', short: 'h', default: false } },
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) return null;
  const [action, id, ...extra] = positionals;
  if (action === undefined) throw new UsageError('name an action: archive');
  if (action !== 'archive') throw new UsageError(`unknown action: ${action}`);
  if (id === undefined) throw new UsageError('archive needs the id of a user effect');
  if (!isUuid(id)) throw new UsageError(`not a user effect id: ${id}`);
  if (extra.length) throw new UsageError(`unexpected arguments: ${extra.join(' ')}`);
  const reason = removalReason(values.reason ?? '');
  if ('problem' in reason) throw new UsageError(reasonProblems[reason.problem]);
  return { action, userEffectId: id.toLowerCase(), reason: reason.reason };
}

export function describeRemoval(id: string, removal: OperatorRemoval): string {
  switch (removal.outcome) {
    case 'archived':
      return `archived ${id} (author ${removal.userEffect.user_id}): ${removal.reversedEarnings} pending earning(s) reversed, the author is told by push`;
    case 'already_archived':
      return `${id} is archived already: nothing changed`;
    case 'not_found':
      return `no user effect ${id}`;
  }
}

async function main(): Promise<number> {
  const command = parseUserEffectsArguments(process.argv.slice(2));
  if (!command) {
    console.log(usage);
    return 0;
  }
  loadEnvFileIfPresent();
  const config = loadConfig();
  const log = createLogger(config.logLevel);
  const infrastructure = await startInfrastructure({ ...config, catalog: { ...config.catalog, seedDemo: false } }, log, { supervise: false, schedule: false });
  try {
    const { db, boss } = infrastructure.services;
    const removal = await removeByOperator(db, boss, { userEffectId: command.userEffectId, reason: command.reason });
    console.log(describeRemoval(command.userEffectId, removal));
    return removal.outcome === 'not_found' ? 1 : 0;
  } finally {
    await infrastructure.stop();
    await flushLogs(log);
  }
}

if (require.main === module) {
  main().then((code) => process.exit(code), (error: unknown) => {
    if (error instanceof UsageError) {
      console.error(`user-effects: ${error.message}\n\n${usage}`);
      process.exit(2);
    }
    console.error(`user-effects: ${(error as Error).message}`);
    process.exit(1);
  });
}
