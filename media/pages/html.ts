/**
 * HTML built with a tagged template that escapes every interpolated value unless it is itself
 * `Html` (made by this template, or a fixed constant wrapped on purpose). A page is assembled from
 * these pieces only, so nothing dynamic (a code from the URL, an order description, a payment id)
 * reaches the markup unescaped.
 */
export class Html {
  constructor(readonly text: string) {}

  toString(): string {
    return this.text;
  }
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}

type Interpolated = Html | string | number | null | undefined | false | readonly Interpolated[];

function render(value: Interpolated): string {
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Interpolated[]): Html {
  let text = strings[0];
  values.forEach((value, index) => {
    text += render(value) + strings[index + 1];
  });
  return new Html(text);
}
