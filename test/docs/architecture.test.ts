import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { repositoryRoot } from './named-paths';

type Floors = Record<string, string[]>;

/** The table under ARCHITECTURE.md's "## Floors": each folder and the folders it may import. */
export function floorsTable(markdown: string): Floors {
  const section = /^## Floors\n([\s\S]*?)(?=^## )/m.exec(markdown)?.[1];
  if (!section) throw new Error('ARCHITECTURE.md has no "## Floors" section');
  const rows = section.split('\n').filter((line) => /^\| `[^`]+\/` \|/.test(line));
  if (!rows.length) throw new Error('the "## Floors" section has no table of folders');
  const floors: Floors = {};
  for (const row of rows) {
    const [folderCell, mayImport] = row.split('|').slice(1, 3);
    const folder = /`([^`]+)\/`/.exec(folderCell)![1];
    if (folder in floors) throw new Error(`the floors table names ${folder}/ twice`);
    const names = [...mayImport.matchAll(/`([^`]+)\/`/g)].map((match) => match[1]);
    if (!names.length && mayImport.trim() !== 'nothing') throw new Error(`the floors table's row of ${folder}/ names no folder and does not say "nothing"`);
    floors[folder] = names.sort();
  }
  return floors;
}

async function eslintAllowed(): Promise<Floors> {
  const config = await import(pathToFileURL(path.join(repositoryRoot, 'eslint.config.mjs')).href);
  return Object.fromEntries(Object.entries(config.allowed as Floors).map(([folder, may]) => [folder, [...may].sort()]));
}

describe('ARCHITECTURE.md', () => {
  it('draws the floors of eslint.config.mjs: every folder, with exactly what it may import', async function () {
    this.timeout(20_000);
    const drawn = floorsTable(readFileSync(path.join(repositoryRoot, 'ARCHITECTURE.md'), 'utf8'));
    expect(drawn).to.deep.equal(await eslintAllowed());
  });

  it('reads a floors table, and refuses one it cannot read', () => {
    const table = (rows: string) => `# A\n\n## Floors\n\n| folder | may import | what |\n|---|---|---|\n${rows}\n## Next\n`;
    expect(floorsTable(table('| `db/` | `common/` | Postgres |\n| `common/` | nothing | words |'))).to.deep.equal({ db: ['common'], common: [] });
    expect(floorsTable(table('| `pool/` | `db/`, `clients/` and `common/` | slots |'))).to.deep.equal({ pool: ['clients', 'common', 'db'] });
    expect(() => floorsTable('# A\n## Roles\n')).to.throw(/no "## Floors"/);
    expect(() => floorsTable(table('| `db/` | Postgres code | x |'))).to.throw(/names no folder/);
    expect(() => floorsTable(table('| `db/` | nothing | x |\n| `db/` | nothing | y |'))).to.throw(/twice/);
  });
});
