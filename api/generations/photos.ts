import type { Character } from '../../db/catalog/model';
import { quantity } from '../../common/plural';
import { errors, invalidField, type ApiError } from '../http/errors';

/**
 * Which photo belongs to which person (the contract: `POST /v1/generations`, its photo rules), as a pure
 * function of the effect and the request, so every rule has a test of its own.
 */
export interface PhotoRequest {
  characters?: string[][];
  upload_id?: string;
  additional_uploads?: string[];
}

export interface PhotoRules {
  characters: Character[];
  /** How many photos the model takes in one generation; null: only `characters` limit them. */
  model_max_photos: number | null;
}

export interface AssignedPhoto {
  upload_id: string;
  /** 0-based index in the effect's `characters`. */
  person: number;
}

/** Where an upload id sits in the request, for the `loc` of an error about it (its first place). */
export function uploadLocations(request: PhotoRequest): Map<string, (string | number)[]> {
  const places = new Map<string, (string | number)[]>();
  const note = (id: string, loc: (string | number)[]) => { if (!places.has(id)) places.set(id, loc); };
  request.characters?.forEach((photos, person) => photos.forEach((id, index) => note(id, ['body', 'characters', person, index])));
  if (request.upload_id !== undefined) note(request.upload_id, ['body', 'upload_id']);
  request.additional_uploads?.forEach((id, index) => note(id, ['body', 'additional_uploads', index]));
  return places;
}

/** Every upload the request names, each once, in order of appearance. */
export function uploadIdsOf(request: PhotoRequest): string[] {
  return [...uploadLocations(request).keys()];
}

const usesFlatForm = (request: PhotoRequest) => request.upload_id !== undefined || request.additional_uploads !== undefined;

/** The photos of each person, or throws the contract's 422 (`validation_error` or `characters_required`). */
export function assignPhotos(rules: PhotoRules, request: PhotoRequest): AssignedPhoto[] {
  let persons: string[][];
  let field: string;
  if (request.characters !== undefined) {
    if (usesFlatForm(request)) throw invalidField(['body', 'characters'], 'send photos either in characters or in upload_id/additional_uploads, not both');
    persons = personsFromCharacters(rules.characters, request.characters);
    field = 'characters';
  } else {
    // A repeated upload_id in the flat list is not refused (contract B rule 4): the list is dealt
    // out and counted as sent, so `upload_id: X, additional_uploads: [X]` gives X to two people.
    const photos = [...(request.upload_id === undefined ? [] : [request.upload_id]), ...(request.additional_uploads ?? [])];
    if (!photos.length) throw noPhoto(['body', 'characters']);
    persons = dealFlatList(rules.characters, photos);
    field = request.upload_id !== undefined ? 'upload_id' : 'additional_uploads';
  }
  checkCounts(rules, persons, field);
  return persons.flatMap((photos, person) => photos.map((upload_id) => ({ upload_id, person })));
}

function noPhoto(loc: (string | number)[]): ApiError {
  return invalidField(loc, 'at least one photo is required', 'min_photos');
}

function personsFromCharacters(characters: Character[], sent: string[][]): string[][] {
  if (sent.length > characters.length) {
    throw invalidField(['body', 'characters'], `the effect takes at most ${quantity(characters.length, 'person', 'people')}`, 'max_people');
  }
  const seen = new Set<string>();
  sent.forEach((photos, person) => photos.forEach((id, index) => {
    if (seen.has(id)) throw invalidField(['body', 'characters', person, index], 'the same upload is sent twice', 'duplicate_upload');
    seen.add(id);
  }));
  // People left out at the end count as sent empty; checkCounts refuses it unless they are optional.
  return characters.map((_, person) => sent[person] ?? []);
}

/**
 * The flat list is dealt out only while ownership is clear: one person; or every person takes at
 * most one photo (one each, in order); or every person takes an exact number (that many each, in
 * order). Anything else is `422 characters_required`.
 */
function dealFlatList(characters: Character[], photos: string[]): string[][] {
  if (characters.length === 1) return [photos];
  const oneEach = characters.every((character) => character.max_photos === 1);
  const exactCounts = characters.every((character) => character.min_photos === character.max_photos);
  if (!oneEach && !exactCounts) throw errors.charactersRequired();
  const persons: string[][] = [];
  let next = 0;
  for (const character of characters) {
    persons.push(photos.slice(next, next + character.max_photos));
    next += character.max_photos;
  }
  if (next < photos.length) {
    throw invalidField(['body', 'additional_uploads'], `the effect takes at most ${quantity(next, 'photo')}`, 'max_photos');
  }
  return persons;
}

function checkCounts(rules: PhotoRules, persons: string[][], field: string): void {
  const total = persons.reduce((sum, photos) => sum + photos.length, 0);
  const loc = (person: number): (string | number)[] => (field === 'characters' ? ['body', 'characters', person] : ['body', field]);
  if (total === 0) throw noPhoto(['body', field]);
  if (persons[0].length === 0) throw invalidField(loc(0), 'the first person is required', 'min_photos');
  rules.characters.forEach((character, person) => {
    const count = persons[person].length;
    if (count < character.min_photos) {
      throw invalidField(loc(person), `person ${person + 1} needs at least ${quantity(character.min_photos, 'photo')}`, 'min_photos');
    }
    if (count > character.max_photos) {
      throw invalidField(loc(person), `person ${person + 1} takes at most ${quantity(character.max_photos, 'photo')}`, 'max_photos');
    }
  });
  if (rules.model_max_photos !== null && total > rules.model_max_photos) {
    throw invalidField(['body', field], `the effect's model takes at most ${quantity(rules.model_max_photos, 'photo')}`, 'model_max_photos');
  }
}
