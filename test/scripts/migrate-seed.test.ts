import { expect } from 'chai';
import { resetDatabase } from '../harness';
import { loggingServiceEnv, runScript, stderrLines } from './run-script';

describe('scripts/migrate and scripts/seed: the result alone on stdout, logs and failures on stderr', function () {
  this.timeout(120_000);

  after(() => resetDatabase());

  it('migrate writes what it applied on stdout and nothing else', async () => {
    const answer = await runScript('migrate', [], loggingServiceEnv());
    expect(answer.status, answer.stderr).to.equal(0);
    expect(answer.stdout).to.equal('already up to date\n');
    expect(stderrLines(answer.stderr).other).to.deep.equal([]);
  });

  it('seed writes its two summary lines on stdout; the logs of the infrastructure it starts go to stderr', async () => {
    await resetDatabase();
    const answer = await runScript('seed', [], loggingServiceEnv());
    expect(answer.status, answer.stderr).to.equal(0);
    const lines = answer.stdout.split('\n');
    expect(lines).to.have.length(3);
    expect(lines[0]).to.match(/^demo catalog: \d+ effects created, 0 updated, \d+ previews built, \d+ categories, \d+ tags \(\d+ ms\)$/);
    expect(lines.slice(1)).to.deep.equal(['demo studio categories: missing ones added', '']);
    const { logs, other } = stderrLines(answer.stderr);
    expect(other).to.deep.equal([]);
    expect(logs.map((line) => line.msg)).to.include('demo payment showcase seeded');
  });

  it('a bad setting is one line on stderr and exit 1, nothing on stdout', async () => {
    for (const script of ['migrate', 'seed']) {
      const answer = await runScript(script, [], { ...loggingServiceEnv(), PORT: 'eighty' });
      expect(answer.status, script).to.equal(1);
      expect(answer.stdout, script).to.equal('');
      expect(answer.stderr, script).to.equal(`${script}: configuration error: PORT must be an integer\n`);
    }
  });
});
