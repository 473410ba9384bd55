import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * What a document names of the repository, and whether it is there: the paths in backticks
 * (`api/app.ts`, `db/generations/`, a bare `schedule-poll.ts`) and the targets of relative links.
 */

export const repositoryRoot = path.join(__dirname, '..', '..', '..');

/** Folders that hold no sources of ours: dependencies, builds, local data. */
const notOurs = new Set(['node_modules', 'dist', '.git', '.data']);

function walk(folder: string, into: string[]): string[] {
  for (const entry of readdirSync(path.join(repositoryRoot, folder), { withFileTypes: true })) {
    if (notOurs.has(entry.name) || entry.name.startsWith('.dist-')) continue;
    const relative = folder ? `${folder}/${entry.name}` : entry.name;
    if (entry.isDirectory()) {
      into.push(`${relative}/`);
      walk(relative, into);
    } else {
      into.push(relative);
    }
  }
  return into;
}

let cached: string[] | null = null;

/** Every file (`a/b.ts`) and folder (`a/`) of the repository, relative to its root. */
export function repositoryEntries(): string[] {
  cached ??= walk('', []);
  return cached;
}

const topLevel = () => new Set(repositoryEntries().filter((entry) => !entry.slice(0, -1).includes('/')).map((entry) => entry.replace(/\/$/, '')));

/**
 * Whether a backticked text names a repository path: a file with a source or document extension,
 * or a folder (ending in `/`), or anything under a top-level entry. URL paths (`/v1/...`),
 * templates (`{id}`, `<code>`), commands (spaces) and package names (`@scope/name`) are not.
 */
export function isPathLike(text: string): boolean {
  if (/[\s:{}<>*?$=,()'"]/.test(text) || text.startsWith('/') || text.startsWith('@') || text.startsWith('-')) return false;
  if (text.startsWith('dist/') || text.startsWith('.data/')) return true;
  if (!text.includes('/')) return /\.(ts|mts|mjs)$/.test(text) && !text.endsWith('.d.ts');
  return /\.(ts|mts|mjs|js|json|md|ya?ml|png|sql|html)$/.test(text) || text.endsWith('/') || topLevel().has(text.split('/')[0]);
}

/**
 * Whether a path-like text is in the repository: from the root when it starts at a top-level
 * entry, else as the end of some path (`runtime/` of `workers/runtime/`, a bare file name).
 * A built file (`dist/scripts/seed.js`) stands for its source; `.data/` is local data, not ours.
 */
export function pathExists(text: string): boolean {
  if (text.startsWith('.data/')) return true;
  const built = /^dist\/(.+)\.js$/.exec(text);
  if (built) return existsSync(path.join(repositoryRoot, `${built[1]}.ts`));
  if (text === 'dist/') return true;
  const entries = repositoryEntries();
  const folderOrFile = (entry: string) => entry === text || entry === `${text}/`;
  if (topLevel().has(text.split('/')[0].replace(/\/$/, ''))) return entries.some(folderOrFile);
  return entries.some((entry) => folderOrFile(entry) || entry.endsWith(`/${text}`) || entry.endsWith(`/${text}/`));
}

/** The texts in backticks of a Markdown document, fenced code blocks left out. */
export function backticked(markdown: string): string[] {
  const prose = markdown.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '');
  return [...prose.matchAll(/`([^`\n]+)`/g)].map((match) => match[1]);
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
export function anchorOf(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

/** The anchors of a Markdown document's headings (GitHub numbers repeats: `name-1`). */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const prose = markdown.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '');
  for (const [, heading] of prose.matchAll(/^#{1,6}\s+(.+)$/gm)) {
    const base = anchorOf(heading);
    let anchor = base;
    for (let repeat = 1; anchors.has(anchor); repeat += 1) anchor = `${base}-${repeat}`;
    anchors.add(anchor);
  }
  return anchors;
}

export interface BrokenReference {
  document: string;
  reference: string;
  why: string;
}

/**
 * Files other engineers are writing, linked ahead of their arrival (the README and the operator's
 * manual point at them): a link to one is not broken while it is missing.
 */
const announced = new Set(['docs/providers.md']);

/** Every backticked path and relative link of `document` (relative to the root) that leads nowhere. */
export function brokenReferences(document: string): BrokenReference[] {
  const markdown = readFileSync(path.join(repositoryRoot, document), 'utf8');
  const broken: BrokenReference[] = [];
  for (const text of backticked(markdown)) {
    if (isPathLike(text) && !pathExists(text)) broken.push({ document, reference: `\`${text}\``, why: 'no such file or folder' });
  }
  const links = [...markdown.matchAll(/\]\(([^)\s]+)\)|<img src="([^"]+)"/g)].map((match) => match[1] ?? match[2]);
  for (const link of links) {
    if (/^[a-z]+:/i.test(link)) continue;
    const [target, anchor] = link.split('#');
    const file = target ? path.posix.normalize(path.posix.join(path.posix.dirname(document), target)) : document;
    if (announced.has(file) && !existsSync(path.join(repositoryRoot, file))) continue;
    if (!existsSync(path.join(repositoryRoot, file))) {
      broken.push({ document, reference: link, why: 'no such file' });
    } else if (anchor && file.endsWith('.md') && !anchorsOf(readFileSync(path.join(repositoryRoot, file), 'utf8')).has(anchor)) {
      broken.push({ document, reference: link, why: `no heading with the anchor #${anchor} in ${file}` });
    }
  }
  return broken;
}
