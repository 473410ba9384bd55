import { readFileSync } from 'node:fs';
import path from 'node:path';
import { sendPage } from '../../media/pages/headers';
import { html, type Html } from '../../media/pages/html';
import { renderConsolePage } from '../../media/pages/layout';

/**
 * `GET /docs/changelog`: `CHANGELOG-API.md`, the dated list of changes to `/v1`, as a page of the
 * service's layout (the guide at `/docs` links it). The file uses a small part of Markdown, and only
 * that part is rendered: `#` headings, `- ` items continued on indented lines, paragraphs, `code`
 * and **bold**; anything else shows as its text, escaped. The layout's policy applies: no script,
 * only the layout's stylesheet.
 */
export const changelogPath = '/docs/changelog';

// From dist/api/docs to the repository's root, where the file is kept.
const changelogFile = path.join(__dirname, '..', '..', '..', 'CHANGELOG-API.md');

let page: string | null = null;

export function sendChangelog(ctx: Parameters<typeof sendPage>[0]): void {
  page ??= changelogPage(readFileSync(changelogFile, 'utf8'));
  sendPage(ctx, { html: page, cacheControl: 'no-cache' });
}

export function changelogPage(markdown: string): string {
  const { title, body } = renderMarkdown(markdown);
  const nav = html`<nav><a class="brand" href="/docs">Effects API</a><a href="/docs">Reference</a><a href="${changelogPath}" aria-current="page">Changelog</a></nav>`;
  return renderConsolePage({ title: title ?? 'API changelog', nav, body });
}

/** `code` spans, and **bold** outside them; the rest as text. */
function inline(text: string): Html {
  return html`${text.split('`').map((part, index) => (index % 2
    ? html`<code>${part}</code>`
    : part.split('**').map((piece, inner) => (inner % 2 ? html`<strong>${piece}</strong>` : piece))))}`;
}

/** The first `# ` heading (as plain text: it is the page's title) and the rest as HTML blocks. */
function renderMarkdown(markdown: string): { title: string | null; body: Html } {
  let title: string | null = null;
  const blocks: Html[] = [];
  let items: string[] = [];
  let paragraph: string[] = [];
  const endParagraph = () => {
    if (paragraph.length) blocks.push(html`<p>${inline(paragraph.join(' '))}</p>`);
    paragraph = [];
  };
  const endList = () => {
    if (items.length) blocks.push(html`<ul>${items.map((item) => html`<li>${inline(item)}</li>`)}</ul>`);
    items = [];
  };
  for (const line of markdown.split('\n')) {
    const heading = /^(#{1,3}) +(.*)$/.exec(line);
    if (heading) {
      endParagraph();
      endList();
      if (heading[1] === '#' && title === null) title = heading[2].replaceAll('`', '');
      else blocks.push(heading[1].length === 3 ? html`<h3>${inline(heading[2])}</h3>` : html`<h2>${inline(heading[2])}</h2>`);
    } else if (line.startsWith('- ')) {
      endParagraph();
      items.push(line.slice(2).trim());
    } else if (/^\s+\S/.test(line) && items.length && !paragraph.length) {
      items[items.length - 1] += ` ${line.trim()}`;
    } else if (line.trim() === '') {
      // A blank line ends a paragraph; a list goes on over blank lines between its items.
      endParagraph();
    } else {
      endList();
      paragraph.push(line.trim());
    }
  }
  endParagraph();
  endList();
  return { title, body: html`${blocks}` };
}
