import { expect } from 'chai';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { logFormatFor } from '../../common/logger';

const run = promisify(execFile);

/** A process that logs one line in `format` on a pipe: what it wrote, and whether it loaded pino-pretty. */
async function logOnce(format: string): Promise<{ stdout: string; prettyLoaded: boolean }> {
  const logger = path.join(__dirname, '..', '..', 'common', 'logger.js');
  const script = `
    const { createProcessLogger, flushLogs } = require(${JSON.stringify(logger)});
    createProcessLogger('info', ${JSON.stringify(format)}).then(async (log) => {
      log.info({ user: 'someone', password: 'hunter2-secret' }, 'hello from the start');
      await flushLogs(log);
      process.stderr.write(JSON.stringify(Object.keys(require.cache).some((file) => file.includes('/node_modules/pino-pretty/'))));
    });`;
  const { stdout, stderr } = await run(process.execPath, ['-e', script]);
  return { stdout, prettyLoaded: JSON.parse(stderr) };
}

describe('the log format of a service process', () => {
  it('LOG_FORMAT when set; else pretty on a terminal, JSON on anything else', () => {
    expect(logFormatFor(null, true)).to.equal('pretty');
    expect(logFormatFor(null, false)).to.equal('json');
    expect(logFormatFor('json', true)).to.equal('json');
    expect(logFormatFor('pretty', false)).to.equal('pretty');
  });

  it('JSON: one object a line, and pino-pretty is never loaded', async () => {
    const { stdout, prettyLoaded } = await logOnce('json');
    const line = JSON.parse(stdout.trim());
    expect(line).to.include({ level: 30, msg: 'hello from the start', user: 'someone', password: '[redacted]' });
    expect(prettyLoaded).to.equal(false);
  });

  it('pretty, on a pipe too: a line for a person with the level and the message, secrets still redacted', async () => {
    const { stdout, prettyLoaded } = await logOnce('pretty');
    expect(prettyLoaded).to.equal(true);
    expect(stdout).to.match(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: hello from the start /);
    expect(stdout).to.contain('"user":"someone"').and.contain('[redacted]').and.not.contain('hunter2-secret');
    expect(stdout.trim().split('\n')).to.have.length(1);
  });
});
