/**
 * A count with its noun in the form English gives it: `quantity(1, 'photo')` is "1 photo",
 * `quantity(2, 'photo')` "2 photos", `quantity(3, 'person', 'people')` "3 people". Messages people
 * read say this, never "photo(s)" or "1 photos".
 */
export function quantity(count: number, singular: string, plural = `${singular}s`): string {
  return `${count} ${count === 1 ? singular : plural}`;
}
