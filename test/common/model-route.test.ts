import { expect } from 'chai';
import { buildInput, outputPath, resultTextOf, resultUrlOf, taskResultOf, unknownPlaceholders } from '../../common/model-route';

const photos = [
  { url: 'https://s/a1.jpg', person: 0 },
  { url: 'https://s/a2.jpg', person: 0 },
  { url: 'https://s/b1.jpg', person: 1 },
];

describe('model routes: a provider input built from a template, a result read from an output', () => {
  it('fills whole-value placeholders with their value: a link, a list of links, the prompt', () => {
    const input = buildInput({
      image: '{{photo}}', images: '{{photos}}', second: '{{photo.2}}', face: '{{person.2.photo}}', firsts: '{{person.1.photos}}', prompt: '{{prompt}}', strength: 0.7,
    }, photos, 'a winter portrait');
    expect(input).to.deep.equal({
      image: 'https://s/a1.jpg',
      images: ['https://s/a1.jpg', 'https://s/a2.jpg', 'https://s/b1.jpg'],
      second: 'https://s/a2.jpg',
      face: 'https://s/b1.jpg',
      firsts: ['https://s/a1.jpg', 'https://s/a2.jpg'],
      prompt: 'a winter portrait',
      strength: 0.7,
    });
  });

  it('interpolates placeholders inside longer text, and fills nested objects and lists', () => {
    const input = buildInput({ prompt: 'portrait of {{prompt}}, film grain', refs: [{ url: '{{person.1.photo.2}}' }, '{{person.2.photo.1}}'] }, photos, 'a cat');
    expect(input).to.deep.equal({ prompt: 'portrait of a cat, film grain', refs: [{ url: 'https://s/a2.jpg' }, 'https://s/b1.jpg'] });
  });

  it('leaves out a field naming a photo the task does not have (an optional person left out), keeps the rest', () => {
    const input = buildInput({ main: '{{person.1.photo}}', partner: '{{person.2.photo}}', extra: ['{{photo.9}}', '{{photo.1}}'] }, photos.slice(0, 1), '');
    expect(input).to.deep.equal({ main: 'https://s/a1.jpg', extra: ['https://s/a1.jpg'] });
  });

  it('names the placeholders that mean nothing, for the catalog import to refuse', () => {
    expect(unknownPlaceholders({ a: '{{photo}}', b: ['{{person.0.photo}}'], c: { d: 'x {{prompts}} y' }, e: 3 })).to.deep.equal(['person.0.photo', 'prompts']);
    expect(unknownPlaceholders({ a: '{{photos}}', b: '{{person.3.photo.2}}' })).to.deep.equal([]);
  });

  it('reads output paths of fields and indexes, and refuses anything else', () => {
    expect(outputPath('')).to.deep.equal([]);
    expect(outputPath('images[0].url')).to.deep.equal(['images', 0, 'url']);
    expect(outputPath('[1]')).to.deep.equal([1]);
    expect(outputPath('video.url')).to.deep.equal(['video', 'url']);
    for (const bad of ['.images', 'images.', 'images[x]', 'a..b', 'a[0', '0.url', 'a b']) expect(outputPath(bad), bad).to.equal(null);
  });

  it('finds the result link: a string output, a list (the first), a file object, a path into an object', () => {
    expect(resultUrlOf('https://r/out.png', undefined)).to.equal('https://r/out.png');
    expect(resultUrlOf(['https://r/1.png', 'https://r/2.png'], '')).to.equal('https://r/1.png');
    expect(resultUrlOf(['https://r/1.png', 'https://r/2.png'], '[1]')).to.equal('https://r/2.png');
    expect(resultUrlOf({ images: [{ url: 'https://f/1.jpg', content_type: 'image/jpeg' }] }, 'images[0].url')).to.equal('https://f/1.jpg');
    expect(resultUrlOf({ images: [{ url: 'https://f/1.jpg' }] }, 'images')).to.equal('https://f/1.jpg');
    expect(resultUrlOf({ video: { url: 'https://f/v.mp4' } }, 'video')).to.equal('https://f/v.mp4');
  });

  it('answers null where the output holds no link there', () => {
    expect(resultUrlOf(null, undefined)).to.equal(null);
    expect(resultUrlOf({ images: [] }, 'images[0].url')).to.equal(null);
    expect(resultUrlOf('not a link', undefined)).to.equal(null);
    expect(resultUrlOf({ a: 1 }, 'a.b')).to.equal(null);
    expect(resultUrlOf('javascript:alert(1)', undefined)).to.equal(null);
  });

  it('reads a text answer given inline: a string that is no link, a list of such strings joined', () => {
    expect(resultTextOf({ output: '{"verdict": "approved"}' }, 'output')).to.equal('{"verdict": "approved"}');
    expect(resultTextOf(['Wear', ' the', ' blue', ' one.'], '')).to.equal('Wear the blue one.');
    expect(resultTextOf('Wear the blue one.', undefined)).to.equal('Wear the blue one.');
    expect(resultTextOf('', undefined)).to.equal('');
  });

  it('reads no text where a link, a file object, a mixed or empty list, or nothing is', () => {
    expect(resultTextOf('https://r/answer.txt', undefined)).to.equal(null);
    expect(resultTextOf(['https://r/1.png', 'https://r/2.png'], '')).to.equal(null);
    expect(resultTextOf(['words', 'https://r/2.png'], '')).to.equal(null);
    expect(resultTextOf({ file: { url: 'https://f/a.txt' } }, 'file')).to.equal(null);
    expect(resultTextOf(['a', 1], '')).to.equal(null);
    expect(resultTextOf([], '')).to.equal(null);
    expect(resultTextOf({ output: 'x' }, 'text')).to.equal(null);
    expect(resultTextOf(null, undefined)).to.equal(null);
  });

  it('gives a poll its link, or else the inline text', () => {
    expect(taskResultOf(['https://r/1.png'], '')).to.deep.equal({ resultUrl: 'https://r/1.png' });
    expect(taskResultOf(['Yes', '.'], '')).to.deep.equal({ resultUrl: null, text: 'Yes.' });
    expect(taskResultOf({ images: [] }, 'images[0].url')).to.deep.equal({ resultUrl: null });
  });
});
