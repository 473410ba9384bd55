import { expect } from 'chai';
import { quantity } from '../../common/plural';
import { problemsOf, schema, type JsonSchema } from '../../common/validation';

describe('counts in messages: the noun in the form English gives it', () => {
  it('quantity: one photo, no photos, 2 photos, one person, 3 people', () => {
    expect([0, 1, 2].map((count) => quantity(count, 'photo'))).to.deep.equal(['0 photos', '1 photo', '2 photos']);
    expect([1, 3].map((count) => quantity(count, 'person', 'people'))).to.deep.equal(['1 person', '3 people']);
  });

  it('the validation messages of a count (items, characters, properties) say 1 item, 2 items', () => {
    const messageOf = (rule: JsonSchema, data: unknown) => problemsOf(rule, data, 'typed').map((problem) => problem.message);
    expect(messageOf(schema.array(schema.string(), { minItems: 1 }), [])).to.deep.equal(['must NOT have fewer than 1 item']);
    expect(messageOf(schema.array(schema.string(), { maxItems: 2 }), ['a', 'b', 'c'])).to.deep.equal(['must NOT have more than 2 items']);
    expect(messageOf(schema.string({ minLength: 1 }), '')).to.deep.equal(['must NOT have fewer than 1 character']);
    expect(messageOf(schema.string({ maxLength: 3 }), 'four')).to.deep.equal(['must NOT have more than 3 characters']);
    expect(messageOf({ type: 'object', maxProperties: 1 }, { a: 1, b: 2 })).to.deep.equal(['must NOT have more than 1 property']);
    expect(messageOf({ type: 'object', minProperties: 2 }, { a: 1 })).to.deep.equal(['must NOT have fewer than 2 properties']);
  });
});
