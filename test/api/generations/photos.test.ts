import { expect } from 'chai';
import { assignPhotos, uploadIdsOf, type PhotoRequest, type PhotoRules } from '../../../api/generations/photos';
import { ApiError } from '../../../api/http/errors';

const person = (min_photos: number, max_photos: number) => ({ min_photos, max_photos });
const effect = (characters: { min_photos: number; max_photos: number }[], model_max_photos: number | null = null): PhotoRules => ({ characters, model_max_photos });

const onePerson = effect([person(1, 1)]);
const hero = effect([person(1, 4)]);
const couple = effect([person(1, 1), person(1, 1)]);
const twins = effect([person(2, 2), person(2, 2)]);
const trio = effect([person(1, 3), person(1, 3), person(0, 2)]);

function refusal(rules: PhotoRules, request: PhotoRequest): { status: number; code: string; loc?: (string | number)[]; type?: string; msg?: string } {
  try {
    assignPhotos(rules, request);
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    return { status: error.status, code: error.code, loc: error.details?.[0].loc, type: error.details?.[0].type, msg: error.details?.[0].msg };
  }
  throw new Error('expected a refusal');
}

describe('photo rules of POST /v1/generations (the photo rules of the contract)', () => {
  describe('characters', () => {
    it('gives each photo its person, in order', () => {
      expect(assignPhotos(trio, { characters: [['a', 'b'], ['c'], ['d']] })).to.deep.equal([
        { upload_id: 'a', person: 0 }, { upload_id: 'b', person: 0 }, { upload_id: 'c', person: 1 }, { upload_id: 'd', person: 2 },
      ]);
    });
    it('accepts an optional person sent as [] or left out when last', () => {
      expect(assignPhotos(trio, { characters: [['a'], ['b'], []] })).to.have.length(2);
      expect(assignPhotos(trio, { characters: [['a'], ['b']] })).to.have.length(2);
    });
    it('refuses leaving out a required person', () => {
      expect(refusal(trio, { characters: [['a']] })).to.deep.include({ status: 422, code: 'validation_error', loc: ['body', 'characters', 1], type: 'min_photos' });
    });
    it('refuses an empty first person', () => {
      expect(refusal(trio, { characters: [[], ['b']] })).to.deep.include({ code: 'validation_error', loc: ['body', 'characters', 0] });
    });
    it('refuses more people than the effect has', () => {
      expect(refusal(couple, { characters: [['a'], ['b'], ['c']] })).to.deep.include({ code: 'validation_error', type: 'max_people' });
    });
    it('refuses fewer or more photos than a person takes', () => {
      expect(refusal(twins, { characters: [['a'], ['b', 'c']] })).to.deep.include({ loc: ['body', 'characters', 0], type: 'min_photos' });
      expect(refusal(couple, { characters: [['a', 'b'], ['c']] })).to.deep.include({ loc: ['body', 'characters', 0], type: 'max_photos' });
    });
    it('says each count with its noun in the right form: 1 photo, 2 photos, 1 person, 2 people', () => {
      expect(refusal(trio, { characters: [['a']] }).msg).to.equal('person 2 needs at least 1 photo');
      expect(refusal(twins, { characters: [['a'], ['b', 'c']] }).msg).to.equal('person 1 needs at least 2 photos');
      expect(refusal(couple, { characters: [['a', 'b'], ['c']] }).msg).to.equal('person 1 takes at most 1 photo');
      expect(refusal(trio, { characters: [['a', 'b', 'c', 'd'], ['e']] }).msg).to.equal('person 1 takes at most 3 photos');
      expect(refusal(onePerson, { characters: [['a'], ['b']] }).msg).to.equal('the effect takes at most 1 person');
      expect(refusal(couple, { characters: [['a'], ['b'], ['c']] }).msg).to.equal('the effect takes at most 2 people');
      expect(refusal(effect([person(1, 4)], 1), { characters: [['a', 'b']] }).msg).to.equal("the effect's model takes at most 1 photo");
      expect(refusal(effect([person(1, 4)], 2), { characters: [['a', 'b', 'c']] }).msg).to.equal("the effect's model takes at most 2 photos");
      expect(refusal(couple, { upload_id: 'a', additional_uploads: ['b', 'c'] }).msg).to.equal('the effect takes at most 2 photos');
    });
    it('refuses the same upload twice, also across people', () => {
      expect(refusal(hero, { characters: [['a', 'a']] })).to.deep.include({ code: 'validation_error', loc: ['body', 'characters', 0, 1], type: 'duplicate_upload' });
      expect(refusal(couple, { characters: [['a'], ['a']] })).to.deep.include({ loc: ['body', 'characters', 1, 0], type: 'duplicate_upload' });
    });
    it("refuses more photos than the effect's model accepts", () => {
      expect(refusal(effect([person(1, 4)], 2), { characters: [['a', 'b', 'c']] })).to.deep.include({ code: 'validation_error', type: 'model_max_photos' });
      expect(assignPhotos(effect([person(1, 4)], 2), { characters: [['a', 'b']] })).to.have.length(2);
    });
    it('refuses no photo at all', () => {
      expect(refusal(onePerson, { characters: [] })).to.deep.include({ status: 422, code: 'validation_error' });
      expect(refusal(onePerson, { characters: [[]] })).to.deep.include({ status: 422, code: 'validation_error' });
      expect(refusal(onePerson, {})).to.deep.include({ status: 422, code: 'validation_error' });
    });
    it('refuses characters sent together with upload_id or additional_uploads', () => {
      expect(refusal(onePerson, { characters: [['a']], upload_id: 'a' })).to.deep.include({ code: 'validation_error', loc: ['body', 'characters'] });
      expect(refusal(hero, { characters: [['a']], additional_uploads: ['b'] })).to.deep.include({ code: 'validation_error', loc: ['body', 'characters'] });
    });
  });

  describe('legacy flat list', () => {
    it('gives every photo to the only person of a one-person effect', () => {
      expect(assignPhotos(hero, { upload_id: 'a', additional_uploads: ['b', 'c'] })).to.deep.equal([
        { upload_id: 'a', person: 0 }, { upload_id: 'b', person: 0 }, { upload_id: 'c', person: 0 },
      ]);
    });
    it('does not refuse a repeated upload_id: the list is dealt out and counted as sent', () => {
      expect(assignPhotos(couple, { upload_id: 'a', additional_uploads: ['a'] })).to.deep.equal([{ upload_id: 'a', person: 0 }, { upload_id: 'a', person: 1 }]);
      expect(assignPhotos(hero, { upload_id: 'a', additional_uploads: ['a'] })).to.deep.equal([{ upload_id: 'a', person: 0 }, { upload_id: 'a', person: 0 }]);
      expect(refusal(onePerson, { upload_id: 'a', additional_uploads: ['a'] })).to.deep.include({ code: 'validation_error', type: 'max_photos' });
    });
    it('deals one photo to each person when every person takes exactly one', () => {
      expect(assignPhotos(couple, { upload_id: 'a', additional_uploads: ['b'] })).to.deep.equal([{ upload_id: 'a', person: 0 }, { upload_id: 'b', person: 1 }]);
      expect(assignPhotos(effect([person(1, 1), person(0, 1)]), { upload_id: 'a' })).to.deep.equal([{ upload_id: 'a', person: 0 }]);
    });
    it('deals photos in order when every person has min_photos == max_photos', () => {
      expect(assignPhotos(twins, { upload_id: 'a', additional_uploads: ['b', 'c', 'd'] }).map((photo) => photo.person)).to.deep.equal([0, 0, 1, 1]);
    });
    it('answers characters_required when ownership is ambiguous', () => {
      expect(refusal(trio, { upload_id: 'a', additional_uploads: ['b'] })).to.deep.include({ status: 422, code: 'characters_required', loc: ['body', 'characters'], type: 'characters_required' });
    });
    it('still checks the count of photos', () => {
      expect(refusal(couple, { upload_id: 'a' })).to.deep.include({ status: 422, code: 'validation_error', type: 'min_photos' });
      expect(refusal(couple, { upload_id: 'a', additional_uploads: ['b', 'c'] })).to.deep.include({ code: 'validation_error', type: 'max_photos' });
      expect(refusal(hero, { upload_id: 'a', additional_uploads: ['b', 'c', 'd', 'e'] })).to.deep.include({ code: 'validation_error', type: 'max_photos' });
      expect(refusal(effect([person(1, 4)], 2), { upload_id: 'a', additional_uploads: ['b', 'c'] })).to.deep.include({ type: 'model_max_photos' });
    });
    it('accepts additional_uploads without upload_id', () => {
      expect(assignPhotos(hero, { additional_uploads: ['a', 'b'] })).to.have.length(2);
    });
  });

  it('lists every named upload once, in order of appearance', () => {
    expect(uploadIdsOf({ characters: [['a', 'b'], ['c']] })).to.deep.equal(['a', 'b', 'c']);
    expect(uploadIdsOf({ upload_id: 'a', additional_uploads: ['b', 'a'] })).to.deep.equal(['a', 'b']);
  });
});
