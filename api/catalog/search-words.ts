/**
 * What a typed or dictated search string means before it reaches the database (catalog rule 4):
 * case, punctuation and extra spaces go, request words ("effect", "photo", "with"…) go, and only the
 * first eight significant words count.
 */

/** Request words: they say what the person wants to do, not what the effect is. One list, both languages. */
const requestWords = new Set([
  // ru
  'эффект', 'эффекты', 'эффекта', 'эффектом', 'эффектов', 'эффекту', 'эффекте', 'эффектами',
  'фото', 'фотка', 'фотки', 'фотку', 'фоткой', 'фоточка', 'фоточку', 'фотография', 'фотографии', 'фотографию',
  'фотографией', 'фотографий', 'картинка', 'картинки', 'картинку', 'изображение', 'изображения',
  'для', 'с', 'со', 'и', 'в', 'во', 'на', 'по', 'из', 'к', 'ко', 'у', 'о', 'об', 'от', 'до', 'за', 'про', 'как',
  'а', 'или', 'мне', 'меня', 'мой', 'моя', 'мое', 'мои', 'моих', 'моего', 'хочу', 'нужен', 'нужна', 'нужно',
  'сделай', 'сделать', 'сделайте', 'найди', 'найти', 'покажи', 'показать', 'пожалуйста', 'это', 'этот', 'эта',
  // en
  'effect', 'effects', 'photo', 'photos', 'pic', 'pics', 'picture', 'pictures', 'image', 'images',
  'with', 'for', 'and', 'or', 'the', 'a', 'an', 'of', 'in', 'on', 'to', 'at', 'by', 'from', 'into',
  'my', 'me', 'i', 'want', 'make', 'show', 'find', 'please', 'some', 'this',
]);

export const maxSearchWords = 8;

export type SearchQuery =
  /** No search: the plain list. */
  | { kind: 'all' }
  /** Nothing can match: no letter or digit was typed. */
  | { kind: 'nothing' }
  | { kind: 'words'; words: string[] };

const wordPattern = /[\p{L}\p{N}]+/gu;

/** "ё" and "е" are one letter to a person typing. */
const folded = (word: string) => word.replace(/ё/g, 'е');

export function parseSearch(text: string | undefined): SearchQuery {
  if (text === undefined || text.trim() === '') return { kind: 'all' };
  const typed = text.toLowerCase().match(wordPattern);
  if (!typed) return { kind: 'nothing' };
  const significant = typed.filter((word) => !requestWords.has(folded(word))).slice(0, maxSearchWords);
  // Only request words ("эффект для фото"): the person asked for effects, any of them.
  if (!significant.length) return { kind: 'all' };
  return { kind: 'words', words: [...new Set(significant)] };
}
