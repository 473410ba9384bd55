import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { expect } from 'chai';
import { createGeneration } from '../../api/generations/create';
import { failGeneration } from '../../db/generations/fail-generation';
import { replayFailed, type ReplayOptions } from '../../services/generations/replay-failed';
import { balanceOf, insertEffect, photo, storedUpload } from '../generation-fixtures';
import { resetDatabase, services } from '../harness';
import { makeUser } from '../users';
import { loggingServiceEnv, runScript, stderrLines } from './run-script';

describe('scripts/replay-failed', () => {
  let effectId: string;

  beforeEach(async () => {
    await resetDatabase();
    effectId = await insertEffect('winter-portrait');
  });

  async function failedGeneration(balance: number, errorCode: string): Promise<{ userId: string; id: string }> {
    const user = await makeUser({ guest: true, balance });
    const upload = await storedUpload(user.id, await photo());
    const { body } = await createGeneration(services(), user.id, { effect_id: effectId, characters: [[upload]] }, null);
    await services().db.transaction((trx) => failGeneration(trx, services().boss, { generationId: body.id, from: 'pending', errorCode }));
    return { userId: user.id, id: body.id };
  }

  const options = (fields: Partial<ReplayOptions>): ReplayOptions => ({ ids: [], errorCode: null, since: null, until: null, limit: 100, apply: false, ...fields });

  it('dry run by default: says what it would do and changes nothing', async () => {
    const rich = await failedGeneration(50, 'provider_error');
    const outcomes = await replayFailed(services(), options({ errorCode: 'provider_error' }));
    expect(outcomes).to.deep.equal([{ failedId: rich.id, userId: rich.userId, action: 'would replay', newId: null, reason: 'cost 10' }]);
    expect(await services().db('generations').count<{ count: number }[]>('* as count')).to.deep.equal([{ count: 1 }]);
    expect(await balanceOf(rich.userId)).to.equal(50);
  });

  it('--apply re-runs each as a new pending generation at the current cost, and skips users who cannot pay', async () => {
    const rich = await failedGeneration(50, 'provider_error');
    const poor = await failedGeneration(10, 'provider_error');
    await services().db('users').where({ id: poor.userId }).update({ balance: 3 });
    await failedGeneration(50, 'safety');
    await services().db('effects').where({ id: effectId }).update({ cost: 12 });
    const outcomes = await replayFailed(services(), options({ errorCode: 'provider_error', apply: true }));
    const replayed = outcomes.find((outcome) => outcome.failedId === rich.id)!;
    expect(replayed).to.include({ action: 'replayed', reason: 'cost 12' });
    expect(outcomes.find((outcome) => outcome.failedId === poor.id)).to.include({ action: 'skipped', reason: 'the user cannot pay 12 (balance 3)' });
    expect(outcomes).to.have.length(2);
    const fresh = await services().db('generations').where({ id: replayed.newId! }).first('status', 'cost', 'user_id');
    expect(fresh).to.deep.equal({ status: 'pending', cost: 12, user_id: rich.userId });
    expect(await balanceOf(rich.userId)).to.equal(38);
    expect(await balanceOf(poor.userId)).to.equal(3);
  });

  it('skips an effect its user may no longer launch, and a dry run counts what the user can pay', async () => {
    const hidden = await failedGeneration(50, 'provider_error');
    await services().db('effects').where({ id: effectId }).update({ hidden: true });
    expect(await replayFailed(services(), options({ ids: [hidden.id] }))).to.deep.equal([
      { failedId: hidden.id, userId: hidden.userId, action: 'skipped', newId: null, reason: 'the effect is gone, hidden or its author\'s only' },
    ]);
    await services().db('effects').where({ id: effectId }).update({ hidden: false });
    const other = await failedGeneration(50, 'provider_error');
    const own = await failedGeneration(50, 'provider_error');
    await services().db('effects').where({ id: effectId }).update({ private_to: own.userId });
    await services().db('users').where({ id: own.userId }).update({ balance: 4 });
    const outcomes = await replayFailed(services(), options({ ids: [other.id, own.id] }));
    expect(outcomes.find((outcome) => outcome.failedId === other.id)).to.include({ action: 'skipped', reason: 'the effect is gone, hidden or its author\'s only' });
    expect(outcomes.find((outcome) => outcome.failedId === own.id)).to.include({ action: 'skipped', reason: 'the user cannot pay 10 (balance 4)' });
  });

  it('selects by id and by time window, and refuses to select everything', async () => {
    const first = await failedGeneration(50, 'provider_error');
    const second = await failedGeneration(50, 'provider_error');
    expect((await replayFailed(services(), options({ ids: [second.id] }))).map((outcome) => outcome.failedId)).to.deep.equal([second.id]);
    expect(await replayFailed(services(), options({ since: new Date(Date.now() + 60_000) }))).to.deep.equal([]);
    expect((await replayFailed(services(), options({ since: new Date(Date.now() - 60_000) }))).map((outcome) => outcome.failedId)).to.deep.equal([first.id, second.id]);
    const refused = await replayFailed(services(), options({})).then(() => null, (error: Error) => error.message);
    expect(refused).to.contain('--id');
  });

  describe('at most once per failed generation', () => {
    it('a second --apply, and --apply --id of the same one, replay nothing more and charge nothing more', async () => {
      const failed = await failedGeneration(50, 'provider_error');
      const [first] = await replayFailed(services(), options({ errorCode: 'provider_error', apply: true }));
      expect(first).to.include({ action: 'replayed' });
      expect(await balanceOf(failed.userId)).to.equal(40);

      for (const again of [options({ errorCode: 'provider_error', apply: true }), options({ ids: [failed.id], apply: true })]) {
        expect(await replayFailed(services(), again)).to.deep.equal([{ failedId: failed.id, userId: failed.userId, action: 'already replayed', newId: first.newId, reason: null }]);
      }
      expect(await balanceOf(failed.userId)).to.equal(40);
      expect(await services().db('generations').where({ user_id: failed.userId }).count<{ count: number }[]>('* as count')).to.deep.equal([{ count: 2 }]);
      expect(await services().db('generations').where({ id: failed.id }).first('replayed_as')).to.deep.equal({ replayed_as: first.newId });
    });

    it('a dry run after an apply shows what was already replayed, with the new id', async () => {
      const failed = await failedGeneration(50, 'provider_error');
      const waiting = await failedGeneration(50, 'provider_error');
      const [replayed] = await replayFailed(services(), options({ ids: [failed.id], apply: true }));
      const dry = await replayFailed(services(), options({ errorCode: 'provider_error' }));
      expect(dry.find((outcome) => outcome.failedId === failed.id)).to.deep.include({ action: 'already replayed', newId: replayed.newId });
      expect(dry.find((outcome) => outcome.failedId === waiting.id)).to.deep.include({ action: 'would replay' });
    });

    it('two runs at the same time replay it once: the loser rolls its attempt and reserve back', async () => {
      const failed = await failedGeneration(100, 'provider_error');
      const runs = await Promise.all([1, 2, 3].map(() => replayFailed(services(), options({ ids: [failed.id], apply: true }))));
      const actions = runs.flat().map((outcome) => outcome.action).sort();
      expect(actions).to.deep.equal(['already replayed', 'already replayed', 'replayed']);
      expect(await balanceOf(failed.userId)).to.equal(90);
      expect(await services().db('generations').where({ user_id: failed.userId }).count<{ count: number }[]>('* as count')).to.deep.equal([{ count: 2 }]);
    });
  });

  describe('the command line', () => {
    const script = path.join(__dirname, '..', '..', 'scripts', 'replay-failed.js');
    const run = (...args: string[]) => spawnSync(process.execPath, [script, ...args], { encoding: 'utf8', env: { ...process.env, LOG_LEVEL: 'silent' } });

    it('--help prints the usage and exits 0', () => {
      const answer = run('--help');
      expect(answer.status).to.equal(0);
      expect(answer.stdout).to.contain('usage: npm run replay-failed --').and.contain('--apply');
      expect(answer.stderr).to.equal('');
    });

    it('a call without filters, an unknown option or a bad id says what is wrong in one line on stderr, nothing on stdout, and exits 2', () => {
      for (const args of [[], ['--apply'], ['--bogus'], ['--id', 'not-an-id'], ['--since', 'yesterday-ish'], ['--error-code', 'x', '--limit', '-5']]) {
        const answer = run(...args);
        expect(answer.status, args.join(' ')).to.equal(2);
        expect(answer.stdout, args.join(' ')).to.equal('');
        expect(answer.stderr, args.join(' ')).to.match(/^replay-failed: [^\n]+ \(npm run replay-failed -- --help shows the usage\)\n$/);
      }
    });

    it('writes the plan alone on stdout (`> plan.txt` holds only it) and the logs of what it starts on stderr', async () => {
      const failed = await failedGeneration(50, 'provider_error');
      const answer = await runScript('replay-failed', ['--since', new Date(Date.now() - 60_000).toISOString()], loggingServiceEnv());
      expect(answer.status, answer.stderr).to.equal(0);
      expect(answer.stdout.split('\n')).to.deep.equal([
        `would replay ${failed.id} (user ${failed.userId}): cost 10`,
        'dry run: 1 would be replayed, 0 already replayed, 0 skipped; add --apply to do it',
        '',
      ]);
      const { logs, other } = stderrLines(answer.stderr);
      expect(other).to.deep.equal([]);
      expect(logs).not.to.deep.equal([]);
    });
  });
});
