import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { brokenReferences, isPathLike, pathExists, repositoryEntries, repositoryRoot } from './named-paths';

/** Every Markdown document of the repository (README.md, ARCHITECTURE.md, docs/, the folders' notes). */
function documents(): string[] {
  return repositoryEntries().filter((entry) => entry.endsWith('.md')).sort();
}

describe('paths named in the documentation', () => {
  it('finds the documents', () => {
    expect(documents()).to.include.members(['README.md', 'ARCHITECTURE.md', 'docs/mobile.md', 'docs/operations.md']);
  });

  it("the README's first screen, before its first section, links the app developers' guide", () => {
    const readme = readFileSync(path.join(repositoryRoot, 'README.md'), 'utf8');
    expect(readme.slice(0, readme.indexOf('\n## '))).to.contain('](docs/mobile.md)');
  });

  for (const document of documents()) {
    it(`${document}: every repository path in backticks and every relative link exists`, () => {
      expect(brokenReferences(document).map((broken) => `${broken.reference}: ${broken.why}`)).to.deep.equal([]);
    });
  }

  it('tells a repository path from other backticked text, and a moved file from a present one', () => {
    for (const text of ['api/app.ts', 'db/generations/', 'schedule-poll.ts', 'dist/scripts/seed.js', 'docs/monitoring/grafana-dashboard.json']) {
      expect(isPathLike(text), text).to.equal(true);
      expect(pathExists(text), text).to.equal(true);
    }
    for (const text of ['/v1/effects', 'image/jpeg', '@pg-boss/dashboard', 'node dist/main.js web', '{PUBLIC_BASE_URL}/ops', 'api.d.ts']) {
      expect(isPathLike(text), text).to.equal(false);
    }
    for (const text of ['service-roles.ts', 'services.ts', 'pool/provider/', 'db/payments/processor/client.ts', 'dist/services.js']) {
      expect(isPathLike(text), text).to.equal(true);
      expect(pathExists(text), text).to.equal(false);
    }
  });
});
