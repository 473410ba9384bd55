import { expect } from 'chai';
import type { ProviderAdapter } from '../../../clients/providers/adapter';
import { insertEffect, photo, startPipeline, storedUpload, waitForTerminal, type Pipeline } from '../../generation-fixtures';
import { capturingLogger, resetDatabase, services, useTestApp } from '../../harness';
import { makeUser } from '../../users';
import { eventually } from '../../../scripts/wait';

/**
 * The provider stops answering for a few seconds (every call refused at once, as a cut network
 * answers) while tasks run on it: the pool notices once, backs off per account and probes, and
 * every task ends when the provider is back.
 */
describe('a provider cut off with tasks in flight', function () {
  this.timeout(90_000);
  const outageMs = 6000;
  const tasks = 4;
  // Polls back to back at 100 ms (a callback that came, or a provider that answers 'running' fast)
  // made one failed poll and one warning line per task every 100 ms.
  const retry = { PROVIDER_RETRY_BASE_MS: '100', PROVIDER_RETRY_CAP_MS: '1000', PROVIDER_CIRCUIT_FAILURES: '3' };
  const t = useTestApp();
  let pipeline: Pipeline | null = null;

  beforeEach(() => resetDatabase());
  afterEach(async () => {
    await pipeline?.stop();
    pipeline = null;
  });

  it('fails a few polls per task, not one every poll interval; one warning when the account stops answering and one when it answers again', async () => {
    let cut = false;
    const failedPolls = new Map<string, number>();
    const cutOff = (real: ProviderAdapter): ProviderAdapter => ({
      submit: (account, request) => (cut ? Promise.resolve({ kind: 'unavailable', reason: 'connection refused', maybeAccepted: false }) : real.submit(account, request)),
      findTask: (account, reference) => (cut ? Promise.resolve({ kind: 'unavailable', reason: 'connection refused' }) : real.findTask(account, reference)),
      poll: (account, taskId) => {
        if (!cut) return real.poll(account, taskId);
        failedPolls.set(taskId, (failedPolls.get(taskId) ?? 0) + 1);
        return Promise.resolve({ kind: 'unavailable', reason: 'connection refused' });
      },
      fetchResult: (url) => real.fetchResult(url),
    });
    const captured = capturingLogger();
    pipeline = await startPipeline({
      config: { PROVIDER_ACCOUNTS: 'outage-key:4', POLL_MIN_INTERVAL_MS: '100', POLL_MAX_INTERVAL_MS: '100', ...retry },
      simulator: { latencyMs: outageMs + 2000 },
      adapter: cutOff,
      services: { log: captured.log },
    });
    const user = await makeUser({ guest: true, balance: 100 });
    const effect = await insertEffect('outage-portrait');
    const ids: string[] = [];
    for (let index = 0; index < tasks; index += 1) {
      const upload = await storedUpload(user.id, await photo());
      const answer = await t.api.post('/v1/generations', { effect_id: effect, characters: [[upload]] }, { token: user.token });
      expect(answer.status, answer.text).to.equal(202);
      ids.push(answer.body.id);
    }
    await eventually(async () => (await services().db('generations').whereIn('id', ids).where({ status: 'processing' }).count<{ count: number }[]>('* as count'))[0].count, (count) => count === tasks, 10_000);

    cut = true;
    await new Promise((resolve) => setTimeout(resolve, outageMs));
    cut = false;
    for (const id of ids) expect(await waitForTerminal(id, 30_000)).to.deep.equal({ status: 'succeeded', error_code: null });

    const perTask = [...failedPolls.values()];
    const total = perTask.reduce((sum, count) => sum + count, 0);
    // The circuit opens after 3 failures; then one probe per backoff (0.5 to 1 s at the cap) for all four tasks.
    expect(total, JSON.stringify(perTask)).to.be.within(3, 3 + Math.ceil(outageMs / 500));
    const warnings = captured.lines().filter((line) => line.level === 40).map((line) => line.msg);
    expect(warnings.filter((message) => /circuit open/.test(String(message))), JSON.stringify(warnings)).to.have.length(1);
    expect(warnings.filter((message) => /circuit closed/.test(String(message))), JSON.stringify(warnings)).to.have.length(1);
    expect(warnings, 'no line per failed poll').to.have.length(2);
  });
});
