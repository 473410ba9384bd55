import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { repositoryEntries, repositoryRoot } from './named-paths';

/**
 * Code and documents say what is, not how it came to be: history lives in the git log, measurements
 * in docs/benchmarks.md. The API changelog is the one dated document.
 */
const dated = new Set(['CHANGELOG-API.md']);

function sources(): string[] {
  return repositoryEntries().filter((entry) => /\.(ts|mts|mjs|md)$/.test(entry) && !dated.has(entry) && entry !== 'test/docs/history.test.ts');
}

const read = (file: string) => readFileSync(path.join(repositoryRoot, file), 'utf8');

/** The lines of `text` that name an issue, or a calendar day other than in a timestamp example or a citation of the contract's changelog. */
export function historyLines(text: string): string[] {
  return text.split('\n').filter((line) => {
    if (/\bissues? (no\.? ?)?#?\d+\b/i.test(line)) return true;
    const days = line.match(/\b20\d\d-\d\d-\d\d\b(?![T ]\d\d:\d\d)/g) ?? [];
    return days.length > 0 && !/contract [AB] 20\d\d-\d\d-\d\d/.test(line);
  });
}

/** `(docs/mobile.md, "A section")` in a comment: the section must be a heading of that document. */
export function missingSections(text: string, headingsOf: (document: string) => string[] | null): string[] {
  const missing: string[] = [];
  for (const [, named, section] of text.matchAll(/\b((?:docs\/[\w-]+|README|ARCHITECTURE)(?:\.md)?), "([^"]+)"/g)) {
    const document = named.endsWith('.md') ? named : `${named}.md`;
    const headings = headingsOf(document);
    if (!headings || !headings.includes(section)) missing.push(`${document}, "${section}"`);
  }
  return missing;
}

function headingsOf(document: string): string[] | null {
  if (!repositoryEntries().includes(document)) return null;
  return read(document).split('\n').filter((line) => /^#{1,4} /.test(line)).map((line) => line.replace(/^#+ /, '').trim());
}

describe('history stays in the git log', () => {
  it('no source, test or document names an issue or a day (timestamps in examples and the API changelog aside)', () => {
    const found = sources().flatMap((file) => historyLines(read(file)).map((line) => `${file}: ${line.trim()}`));
    expect(found).to.deep.equal([]);
  });

  it('tells history from an example timestamp and a citation of the contract', () => {
    expect(historyLines('measured 2026-11-27: 26 ms\n// see issue 15\nIssue #4 says')).to.have.length(3);
    expect(historyLines("created_at: '2026-11-23T12:00:00.000Z'\n`2026-11-23 14:05 UTC`\n(no `available`, contract A 2026-09-07)\nan issue of the magazine")).to.deep.equal([]);
  });

  it('every section a comment or document points to, as (docs/x.md, "Section"), is a heading there', () => {
    const found = sources().flatMap((file) => missingSections(read(file), headingsOf).map((reference) => `${file}: ${reference}`));
    expect(found).to.deep.equal([]);
    expect(missingSections('(docs/mobile.md, "No such section") (docs/none.md, "Push") (README, "Cancel")', headingsOf)).to.have.length(3);
  });
});
