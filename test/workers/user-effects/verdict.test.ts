import { expect } from 'chai';
import { parseVerdict } from '../../../workers/user-effects/moderation';

describe('the moderation model\'s verdict', () => {
  it('reads the JSON answer, bare or in the Markdown code fence language models often add', () => {
    expect(parseVerdict('{"verdict": "approved"}')).to.deep.equal({ verdict: 'approved', reason: null });
    expect(parseVerdict('```json\n{"verdict": "rejected", "reason": "bad_sample"}\n```\n')).to.deep.equal({ verdict: 'rejected', reason: 'bad_sample' });
    expect(parseVerdict('```\n{"verdict": "rejected", "reason": "content_policy"}\n```')).to.deep.equal({ verdict: 'rejected', reason: 'content_policy' });
  });

  it('finds no verdict in prose, an unknown reason, a fence around something else, or a fence left open', () => {
    for (const text of ['Approved!', '{"verdict": "rejected", "reason": "ugly"}', '{"verdict": "maybe"}', '```json\n["approved"]\n```', '```json\n{"verdict": "approved"}', 'null']) {
      expect(parseVerdict(text), text).to.equal(null);
    }
  });
});
