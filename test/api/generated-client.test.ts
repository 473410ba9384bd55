import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { insertEffect, photo, startPipeline, type Pipeline } from '../generation-fixtures';
import { freshShowcase, startTestbed, type Testbed } from '../payment-testbed';

const run = promisify(execFile);
const repository = path.resolve(__dirname, '../../..');

/** The code block of docs/mobile.md's "A typed client" that calls the API through openapi-fetch. */
function guideExample(): string {
  const guide = readFileSync(path.join(repository, 'docs/mobile.md'), 'utf8');
  const section = guide.slice(guide.indexOf('\n## A typed client\n'), guide.indexOf('\n## ', guide.indexOf('\n## A typed client\n') + 1));
  const example = [...section.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1]).find((code) => code.includes("from 'openapi-fetch'"));
  if (!example) throw new Error('docs/mobile.md, "A typed client": no example with openapi-fetch');
  return example;
}

/**
 * A client generated from `/v1/openapi.json` by tools nobody here wrote works: at test time
 * openapi-typescript turns the served document into types (the command docs/mobile.md gives, on the
 * running service's address), `test/api/generated-client/flow.mts` (a mobile app's main flow on
 * openapi-fetch) and the guide's own example are type-checked against them under `strict`, then the
 * flow runs against the service with the real pipeline and the payment processor simulator. Generated
 * into a scratch folder on every run rather than committed: the document is generated from the route
 * table, so a committed copy would only be a second thing to keep in step.
 */
describe('a client generated from /v1/openapi.json (openapi-typescript + openapi-fetch)', function () {
  this.timeout(120_000);
  // Inside the repository, so the flow resolves openapi-fetch from its node_modules.
  const scratch = path.join(repository, 'dist', `generated-client-${process.pid}`);
  let bed: Testbed;
  let pipeline: Pipeline;
  let effectId: string;

  before(async () => {
    await freshShowcase();
    effectId = await insertEffect('winter-portrait');
    bed = await startTestbed();
    pipeline = await startPipeline();
    mkdirSync(scratch, { recursive: true });
    writeFileSync(path.join(scratch, 'photo.jpg'), await photo(640, 480));
    copyFileSync(path.join(repository, 'test/api/generated-client/flow.mts'), path.join(scratch, 'flow.mts'));
    // docs/mobile.md, "A typed client": its openapi-fetch example, with the types where this test writes them.
    writeFileSync(path.join(scratch, 'guide-example.mts'), guideExample().replace("from './api/schema'", "from './api.js'"));
  });
  after(async () => {
    await pipeline?.stop();
    await bed?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('generates types (the streams\' events too), type-checks the app flow against them, and runs it: guest, upload, generation followed on its stream to succeeded, payment', async () => {
    await run(process.execPath, [path.join(repository, 'node_modules/openapi-typescript/bin/cli.js'), `${bed.app.url}/v1/openapi.json`, '--output', 'api.d.ts'], { cwd: scratch });
    // The streams' event data are named schemas: the generated client has their types.
    const types = readFileSync(path.join(scratch, 'api.d.ts'), 'utf8');
    for (const name of ['GenerationStreamEvent', 'UserEffectStreamEvent', 'PaymentStreamEvent']) expect(types, name).to.match(new RegExp(`^\\s+${name}: \\{$`, 'm'));
    await run(process.execPath, [
      path.join(repository, 'node_modules/typescript/bin/tsc'), '--noEmit', '--strict', '--target', 'es2022', '--module', 'nodenext',
      '--moduleResolution', 'nodenext', '--types', 'node', '--typeRoots', path.join(repository, 'node_modules/@types'), '--skipLibCheck', 'flow.mts', 'guide-example.mts',
    ], { cwd: scratch }).catch((error: { stdout: string }) => {
      throw new Error(`the flow or the guide's example does not type-check against the generated client:\n${error.stdout}`);
    });

    const { stdout } = await run(process.execPath, ['flow.mts', bed.app.url, effectId, 'photo.jpg'], { cwd: scratch });
    const outcome = JSON.parse(stdout.trim().split('\n').pop()!);

    expect(outcome.guest).to.deep.equal({ isGuest: true, startBalance: 100, sameUser: true });
    expect(outcome.upload).to.equal('completed');
    expect(outcome.generation).to.deep.equal({
      status: 'succeeded', streamed: outcome.generation.streamed, cost: 10, resultStatus: 200, resultType: outcome.generation.resultType, preview: true, listed: true,
    });
    expect(outcome.generation.streamed.at(-1)).to.equal('succeeded');
    expect(outcome.generation.resultType).to.match(/^image\//);
    expect(outcome.missingCode).to.equal('not_found');
    expect(outcome.payment).to.include({ pageStatus: 200, status: 'succeeded', credits: 100 });
    expect(outcome.payment.paidAt).to.be.a('string');
    // 100 to start, 50 for registering, 10 spent, 100 bought (pack_100 comes first in the showcase).
    expect(outcome.balance).to.equal(240);
  });
});
