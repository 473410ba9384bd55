import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chaosDefaults, runChaos, shortChaos } from '../../scripts/chaos';

describe('the fault suite, short form of npm run chaos', function () {
  this.timeout(400_000);
  let outDir: string;
  before(() => {
    outDir = mkdtempSync(path.join(os.tmpdir(), 'chaos-test-'));
  });
  after(() => rmSync(outDir, { recursive: true, force: true }));

  it('with a worker and a media process killed, Postgres restarted, the provider frozen and cut off: nothing lost or stuck, credits exact, back in service within 15 s, no 5xx but 503, nothing submitted twice, a few failed polls per task', async () => {
    const report = await runChaos({ ...chaosDefaults, ...shortChaos, outDir });
    const summary = JSON.stringify({ faults: report.faults, generations: report.generations, provider: report.provider, clients: report.clients }, null, 1);
    expect(report.invariants, summary).to.deep.equal({
      noGenerationLost: true,
      noGenerationStuck: true,
      creditsConserved: true,
      everyFailureRefundedOnce: true,
      everySuccessHasItsPreview: true,
    });
    expect(report.goals, summary).to.deep.equal({
      workerBackInServiceWithinGoal: true,
      mediaBackInServiceWithinGoal: true,
      no5xxButRetryableDuringRestart: true,
      noDuplicateSubmission: true,
      fewFailedPollsPerTaskDuringPartition: true,
    });
    expect(report.faults.postgresRestart.status503, 'the restart was felt by clients').to.be.above(0);
    // Polls alone may not feel it: refused submissions can open the accounts' circuits before the
    // tasks' callbacks come, and their polls are then deferred without a call (as the goal wants).
    const cut = report.faults.providerPartitioned;
    expect(cut.failedPolls + cut.refusedSubmissions + cut.refusedLookups, `the partition was felt by the calls to the provider: ${JSON.stringify(cut)}`).to.be.above(0);
    expect(report.provider.callbacksAnswered, 'the provider\'s callbacks reach the web role').to.be.above(report.provider.tasksCreated / 2);
  });
});
