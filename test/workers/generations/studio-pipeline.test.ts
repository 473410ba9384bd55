import { expect } from 'chai';
import sharp from 'sharp';
import { adapterWith, balanceOf, insertStudioCategories, ledgerOf, photo, registeredPushDevice, startPipeline, storedUpload, waitForTerminal, type Pipeline } from '../../generation-fixtures';
import { resetDatabase, services, useTestApp } from '../../harness';
import { makeUser, type TestUser } from '../../users';
import { jobDataOf, jobsOf } from '../../jobs';
import { overKind } from '../../provider-kind';

describe(overKind('studio generations through the one pipeline, with the provider simulator'), function () {
  this.timeout(60_000);
  const t = useTestApp();
  let pipeline: Pipeline;
  let user: TestUser;
  beforeEach(async () => {
    await resetDatabase();
    await insertStudioCategories();
    user = await makeUser({ balance: 100 });
    // After the reset: the pipeline syncs its provider accounts at start.
    pipeline = await startPipeline();
  });
  afterEach(() => pipeline.stop());

  async function studio(body: { category_id: string; prompt: string; upload_ids?: string[] }) {
    const answer = await t.api.post('/v1/studio/generations', body, { token: user.token });
    expect(answer.status, answer.text).to.equal(202);
    const id = answer.body.id as string;
    expect(await waitForTerminal(id)).to.deep.equal({ status: 'succeeded', error_code: null });
    return (await t.api.get(`/v1/generations/${id}`, { token: user.token })).body;
  }

  async function resultPixels(url: string): Promise<Buffer> {
    const body = Buffer.from(await (await fetch(url)).arrayBuffer());
    return sharp(body).resize(8, 8).raw().toBuffer();
  }

  it('text_to_image draws a picture from the prompt: stored with its preview; another prompt draws another one', async () => {
    const fox = await studio({ category_id: 'text-to-image', prompt: 'a red fox in the snow' });
    expect(fox).to.include({ kind: 'studio', output_type: 'image', result_text: null, error_code: null, queue_position: null, estimated_wait_s: null });
    expect(new URL(fox.result_url).pathname).to.equal(`/media/results/${user.id}/${fox.id}.jpg`);
    expect(fox.preview).to.include({ width: 256, height: 256, poster: null });
    const owl = await studio({ category_id: 'text-to-image', prompt: 'an owl at night' });
    expect((await resultPixels(fox.result_url)).equals(await resultPixels(owl.result_url))).to.equal(false);
    expect(await balanceOf(user.id)).to.equal(84);
    expect(await ledgerOf(user.id)).to.deep.equal([{ kind: 'reserve', amount: -8, reference: fox.id }, { kind: 'reserve', amount: -8, reference: owl.id }]);
  });

  it('photo_edit changes the first photo', async () => {
    const upload = await storedUpload(user.id, await photo(64, 48, '#c08040'));
    const edited = await studio({ category_id: 'photo-edit', prompt: 'make it look like night', upload_ids: [upload] });
    expect(edited.preview).to.include({ width: 64, height: 48 });
    const result = await sharp(Buffer.from(await (await fetch(edited.result_url)).arrayBuffer())).stats();
    // The photo was a warm brown: its negative is dominated by blue.
    expect(result.channels[2].mean).to.be.above(result.channels[0].mean);
  });

  it('ask answers in text: result_text on the generation, no result_url and no preview, succeeded with its push', async () => {
    await registeredPushDevice(user.id);
    const answer = await studio({ category_id: 'ask-stylist', prompt: 'What goes with a green coat?' });
    expect(answer).to.include({ status: 'succeeded', output_type: 'text', result_url: null, preview: null });
    expect(answer.result_text).to.equal('Stylist\'s advice for "What goes with a green coat?": wear what you feel at ease in.');
    const row = await services().db('generations').where({ id: answer.id }).first('result_key', 'result_text', 'provider_task_id');
    expect(row.result_key).to.equal(null);
    expect(row.provider_task_id).to.be.a('string');
    expect(await jobDataOf('push-send', { reference: answer.id })).to.deep.equal([{ userId: user.id, kind: 'generation', reference: answer.id, data: { generation_id: answer.id, status: 'succeeded', error_code: '' } }]);
    expect(await jobsOf('generation-media'), 'a text answer succeeds in the worker, without a media job').to.have.length(0);
    expect(await balanceOf(user.id)).to.equal(98);
  });

  it('a text answer is cut to 1000 characters; the photo of an ask task reaches the model', async () => {
    const upload = await storedUpload(user.id, await photo(64, 48));
    const answer = await studio({ category_id: 'ask-stylist', prompt: `Что надеть? ${'очень '.repeat(1500)}`, upload_ids: [upload] });
    expect(Array.from(answer.result_text as string).length).to.be.at.most(1000);
    expect(answer.result_text).to.match(/^Совет стилиста по фото 64×48 на вопрос «Что надеть\? очень/);
  });

  it('an answer the provider gives inline is kept without a download; a blank one is result_rejected and refunded', async () => {
    await pipeline.stop();
    let answer = '  Wear the blue one.  ';
    const downloads: string[] = [];
    pipeline = await startPipeline({
      adapter: (real) => adapterWith(real, {
        poll: async (...args) => {
          const polled = await real.poll(...args);
          return polled.kind === 'succeeded' ? { kind: 'succeeded', resultUrl: null, text: answer } : polled;
        },
        fetchResult: async (url) => {
          downloads.push(url);
          return real.fetchResult(url);
        },
      }),
    });
    const kept = await studio({ category_id: 'ask-stylist', prompt: 'Blue or green?' });
    expect(kept).to.include({ status: 'succeeded', output_type: 'text', result_text: 'Wear the blue one.', result_url: null });
    expect(downloads).to.deep.equal([]);
    answer = ' \n ';
    const launched = await t.api.post('/v1/studio/generations', { category_id: 'ask-stylist', prompt: 'Blue or green?' }, { token: user.token });
    expect(await waitForTerminal(launched.body.id as string)).to.deep.equal({ status: 'failed', error_code: 'result_rejected' });
    expect(await balanceOf(user.id)).to.equal(98);
  });
});
