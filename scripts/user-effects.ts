import '../process/runtime-check';
import { loadEnvFileIfPresent } from '../process/env-file';
import { parseArgs } from 'node:util';
import { quantity } from '../common/plural';
import { isUuid } from '../common/validation';
import { loadConfig } from '../config';
import { removalReason, removalReasonMaxLength, removeByOperator, type OperatorRemoval } from '../db/user-effects/remove-by-operator';
import { startInfrastructure } from '../process/infrastructure';
import { createScriptLogger } from '../common/logger';
import { runOperatorScript, ScriptFailure, UsageError } from './operator';

const usage = `Operator actions on user effects of the marketplace.

usage: npm run user-effects -- archive <user effect id> --reason <text>

  archive <id>     removes the user effect: archived, its catalog effect hidden from everyone, its
                   pending earnings reversed (settled ones stay), and the author told by push
  --reason <text>  why (kept on the user effect for the record; required, up to ${removalReasonMaxLength} characters)
  --help           this text

The operator console's Archive button (/ops/marketplace) calls the same function
(db/user-effects/remove-by-operator.ts).`;

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

export function describeRemoval(id: string, removal: Exclude<OperatorRemoval, { outcome: 'not_found' }>): string {
  switch (removal.outcome) {
    case 'archived':
      return `archived ${id} (author ${removal.userEffect.user_id}): ${quantity(removal.reversedEarnings, 'pending earning')} reversed, the author is told by push`;
    case 'already_archived':
      return `${id} is archived already: nothing changed`;
  }
}

async function main(): Promise<void> {
  const command = parseUserEffectsArguments(process.argv.slice(2));
  if (!command) {
    console.log(usage);
    return;
  }
  loadEnvFileIfPresent();
  const config = loadConfig();
  const log = createScriptLogger(config.logLevel);
  const infrastructure = await startInfrastructure({ ...config, catalog: { ...config.catalog, seedDemo: false } }, log, { supervise: false, schedule: false });
  try {
    const { db, boss } = infrastructure.services;
    const removal = await removeByOperator(db, boss, { userEffectId: command.userEffectId, reason: command.reason });
    if (removal.outcome === 'not_found') throw new ScriptFailure(`no user effect ${command.userEffectId}`);
    console.log(describeRemoval(command.userEffectId, removal));
  } finally {
    await infrastructure.stop();
  }
}

if (require.main === module) runOperatorScript('user-effects', main, { help: true });
