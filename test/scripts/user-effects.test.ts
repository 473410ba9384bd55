import { execFile } from 'node:child_process';
import path from 'node:path';
import { expect } from 'chai';
import { resetDatabase, serviceEnv, services } from '../harness';
import { earningOf } from '../user-effect-fixtures';
import { makeUser } from '../users';
import { jobsOf } from '../jobs';

describe('scripts/user-effects (npm run user-effects)', function () {
  this.timeout(60_000);
  const script = path.join(__dirname, '..', '..', 'scripts', 'user-effects.js');
  // Asynchronous: the test run's object store serves from this process, which must stay responsive.
  const run = (args: string[], env: Record<string, string> = {}): Promise<{ status: number | null; stdout: string; stderr: string }> =>
    new Promise((resolve) => {
      const child = execFile(process.execPath, [script, ...args], { encoding: 'utf8', timeout: 45_000, env: { ...process.env, LOG_LEVEL: 'silent', ...env } },
        (_error, stdout, stderr) => resolve({ status: child.exitCode, stdout, stderr }));
    });

  beforeEach(() => resetDatabase());

  it('--help prints the usage and exits 0', async () => {
    const answer = await run(['--help']);
    expect(answer.status).to.equal(0);
    expect(answer.stdout).to.contain('usage: npm run user-effects -- archive <user effect id> --reason <text>');
    expect(answer.stderr).to.equal('');
  });

  it('no arguments, an unknown action, a bad id or no reason print what is wrong and the usage, no stack trace, and exit 2', async () => {
    for (const args of [[], ['remove', '00000000-0000-4000-8000-000000000000'], ['archive'], ['archive', 'not-an-id', '--reason', 'x'],
      ['archive', '00000000-0000-4000-8000-000000000000'], ['archive', '00000000-0000-4000-8000-000000000000', '--reason', '  '], ['archive', '--bogus']]) {
      const answer = await run(args);
      expect(answer.status, args.join(' ')).to.equal(2);
      expect(answer.stderr, args.join(' ')).to.match(/^user-effects: /).and.contain('usage: npm run user-effects');
      expect(answer.stderr, args.join(' ')).to.not.match(/\n\s+at /);
    }
  });

  it('archive <id> --reason: archived by the operator, pending earnings reversed, the author\'s push queued; an unknown id exits 1', async () => {
    const author = await makeUser();
    const { earningId, userEffectId } = await earningOf(author.id, { settlesInS: 600 });
    const answer = await run(['archive', userEffectId, '--reason', 'stolen sample'], serviceEnv());
    expect(answer.status, answer.stdout + answer.stderr).to.equal(0);
    expect(answer.stdout).to.contain(`archived ${userEffectId}`).and.contain('1 pending earning(s) reversed');
    const { db } = services();
    expect(await db('user_effects').where({ id: userEffectId }).first()).to.include({ status: 'archived', archived_by: 'operator', archive_reason: 'stolen sample' });
    expect(await db('user_effect_earnings').where({ id: earningId }).first()).to.include({ status: 'reversed' });
    expect(await jobsOf('push-send', { kind: 'effect_removed' })).to.have.length(1);
    const again = await run(['archive', userEffectId, '--reason', 'again'], serviceEnv());
    expect(again.status).to.equal(0);
    expect(again.stdout).to.contain('archived already');
    const unknown = await run(['archive', '00000000-0000-4000-8000-000000000000', '--reason', 'x'], serviceEnv());
    expect(unknown.status).to.equal(1);
    expect(unknown.stdout).to.contain('no user effect');
  });
});
