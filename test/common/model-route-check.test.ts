import { expect } from 'chai';
import { modelRoutesProblems } from '../../common/model-route-check';

const effect = { persons: 2, photos: true };
/** `path message` of each problem, as the import's row errors say them. */
const said = (value: unknown, task = effect) => modelRoutesProblems(value, task).map((problem) => `${problem.path.join('.')} ${problem.message}`);

describe('model route checks: what a route per provider kind must be', () => {
  it('passes usable routes of every kind: official model or version id, app id, simulator model', () => {
    expect(said({
      replicate: { model: 'black-forest-labs/flux-kontext-pro', input: { prompt: 'winter', input_image: '{{person.1.photo}}' } },
      fal: { model: 'fal-ai/flux-pro/kontext', input: { prompt: 'winter', image_url: '{{photo}}' }, output: 'images[0].url' },
      simulator: { model: 'image' },
    })).to.deep.equal([]);
    expect(said({ replicate: { model: '95fcc2a26d3899cd6c2691c900465aaeff466285a65c14638cc5f36f34befaf1', input: { image: '{{photo}}' }, output: '' } })).to.deep.equal([]);
    expect(said({ fal: { model: 'openrouter/router/vision', input: { image_urls: ['{{photo}}'], prompt: '{{prompt}}' }, output: 'output' } })).to.deep.equal([]);
  });

  it('names a model id of the wrong shape for its kind', () => {
    const input = { image: '{{photo}}' };
    expect(said({ replicate: { model: 'flux-kontext-pro', input } })).to.deep.equal(['replicate.model must be owner/name (an official model) or a 64-character version id']);
    expect(said({ replicate: { model: 'owner/name/extra', input } })[0]).to.contain('owner/name');
    expect(said({ fal: { model: 'kontext', input } })).to.deep.equal(['fal.model must be an app id such as fal-ai/flux-pro/kontext']);
    expect(said({ fal: { model: 'fal-ai/../secrets', input } })[0]).to.contain('app id');
    expect(said({ simulator: { model: 'Image Model' } })[0]).to.contain("simulator.model must be one of the simulator's models");
  });

  it('names an unknown kind, a route without a kind, and a route of the wrong shape', () => {
    expect(said({ openai: { model: 'gpt' } })).to.deep.equal([
      'openai is not a provider kind (simulator, replicate, fal)',
      ' must name at least one provider kind (simulator, replicate, fal)',
    ]);
    expect(said([])).to.deep.equal([' must be an object with a route per provider kind (simulator, replicate, fal)']);
    expect(said({ fal: { input: {}, extra: 1 } })).to.have.members(['fal.model must have required property \'model\'', 'fal.extra is not a known field']);
  });

  it('needs an input for a real provider, placing a photo, with known placeholders and persons the task has', () => {
    expect(said({ replicate: { model: 'a/b' } })).to.deep.equal(['replicate.input is required: the model\'s input object, with placeholders where the photos and the prompt go']);
    expect(said({ fal: { model: 'fal-ai/x', input: { prompt: 'just text' } } })[0]).to.contain('fal.input places no photo');
    expect(said({ fal: { model: 'fal-ai/x', input: { image_url: '{{photo}}', prompt: 'a {{style}} of {{person.0.photo}}' } } }))
      .to.deep.equal(['fal.input names {{style}}, {{person.0.photo}}, which mean nothing (known: {{prompt}}, {{photos}}, {{photo}}, {{photo.N}}, {{person.P.photo}}, {{person.P.photo.N}}, {{person.P.photos}})']);
    expect(said({ fal: { model: 'fal-ai/x', input: { image_urls: ['{{person.1.photo}}', '{{person.3.photos}}'] } } }))
      .to.deep.equal(['fal.input names person 3, but the task has 2']);
    // A text-only task (a studio category without photos) places none.
    expect(said({ fal: { model: 'fal-ai/flux/schnell', input: { prompt: '{{prompt}}' } } }, { persons: 1, photos: false })).to.deep.equal([]);
  });

  it('names an output that is not a path of fields and indexes', () => {
    expect(said({ fal: { model: 'fal-ai/x', input: { image_url: '{{photo}}' }, output: 'images.[0]' } }))
      .to.deep.equal(['fal.output must be a path of fields and list indexes such as images[0].url or [0], or empty for the output itself']);
  });
});
