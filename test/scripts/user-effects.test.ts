import { expect } from 'chai';
import { resetDatabase, serviceEnv, services } from '../harness';
import { earningOf } from '../user-effect-fixtures';
import { makeUser } from '../users';
import { loggingServiceEnv, runScript, stderrLines } from './run-script';
import { jobsOf } from '../jobs';

describe('scripts/user-effects (npm run user-effects)', function () {
  this.timeout(60_000);
  const run = (args: string[], env: Record<string, string> = {}) => runScript('user-effects', args, env);

  beforeEach(() => resetDatabase());

  it('--help prints the usage and exits 0', async () => {
    const answer = await run(['--help']);
    expect(answer.status).to.equal(0);
    expect(answer.stdout).to.contain('usage: npm run user-effects -- archive <user effect id> --reason <text>');
    expect(answer.stderr).to.equal('');
  });

  it('no arguments, an unknown action, a bad id or no reason say what is wrong in one line on stderr, nothing on stdout, and exit 2', async () => {
    for (const args of [[], ['remove', '00000000-0000-4000-8000-000000000000'], ['archive'], ['archive', 'not-an-id', '--reason', 'x'],
      ['archive', '00000000-0000-4000-8000-000000000000'], ['archive', '00000000-0000-4000-8000-000000000000', '--reason', '  '], ['archive', '--bogus']]) {
      const answer = await run(args);
      expect(answer.status, args.join(' ')).to.equal(2);
      expect(answer.stdout, args.join(' ')).to.equal('');
      expect(answer.stderr, args.join(' ')).to.match(/^user-effects: [^\n]+ \(npm run user-effects -- --help shows the usage\)\n$/);
    }
  });

  it('archive <id> --reason: archived by the operator, pending earnings reversed, the author\'s push queued; an unknown id exits 1 with one line on stderr', async () => {
    const author = await makeUser();
    const { earningId, userEffectId } = await earningOf(author.id, { settlesInS: 600 });
    const answer = await run(['archive', userEffectId, '--reason', 'stolen sample'], loggingServiceEnv());
    expect(answer.status, answer.stdout + answer.stderr).to.equal(0);
    // The outcome alone on stdout; the logs of what the script started on stderr.
    expect(answer.stdout).to.equal(`archived ${userEffectId} (author ${author.id}): 1 pending earning reversed, the author is told by push\n`);
    expect(stderrLines(answer.stderr).other).to.deep.equal([]);
    const { db } = services();
    expect(await db('user_effects').where({ id: userEffectId }).first()).to.include({ status: 'archived', archived_by: 'operator', archive_reason: 'stolen sample' });
    expect(await db('user_effect_earnings').where({ id: earningId }).first()).to.include({ status: 'reversed' });
    expect(await jobsOf('push-send', { kind: 'effect_removed' })).to.have.length(1);
    const again = await run(['archive', userEffectId, '--reason', 'again'], serviceEnv());
    expect(again.status).to.equal(0);
    expect(again.stdout).to.contain('archived already');
    const unknown = await run(['archive', '00000000-0000-4000-8000-000000000000', '--reason', 'x'], loggingServiceEnv());
    expect(unknown.status).to.equal(1);
    expect(unknown.stdout).to.equal('');
    expect(stderrLines(unknown.stderr).other).to.deep.equal(['user-effects: no user effect 00000000-0000-4000-8000-000000000000']);
  });
});
