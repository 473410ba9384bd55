import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseEnv } from 'node:util';
import { loadConfig } from '../../config';
import { configurationMarkdown, configurationPagePath, envExamplePath, parseEnvExample } from '../../scripts/config-docs';

describe('docs/configuration.md', () => {
  const envExample = readFileSync(envExamplePath, 'utf8');

  it('is what `npm run docs:config` writes from .env.example now', () => {
    const committed = readFileSync(configurationPagePath, 'utf8');
    expect(committed === configurationMarkdown(envExample), 'docs/configuration.md is stale: run `npm run docs:config`').to.equal(true);
  });

  it('has a row, with its note, for every variable of .env.example', () => {
    const page = readFileSync(configurationPagePath, 'utf8');
    for (const group of parseEnvExample(envExample)) {
      expect(page).to.include(`\n## ${group.title}\n`);
      for (const variable of group.variables) expect(page).to.match(new RegExp(`\\| \`${variable.name}\` \\| [^|]+ \\| .+ \\|`));
    }
  });

  it('refuses a variable without its one-line note, written twice, or with its note in the value', () => {
    expect(() => parseEnvExample('## Group\n# NEW_VARIABLE=1\n')).to.throw(/line 2: write a variable as/);
    expect(() => parseEnvExample('## Group\n# PORT=8080  # the port\n# PORT=8081  # again\n')).to.throw(/PORT is named twice/);
    expect(() => parseEnvExample('## Group\n# H2C_PORT=   (set: also HTTP/2)\n')).to.throw(/line 2: write a variable as/);
    expect(() => parseEnvExample('# PORT=8080  # before any group\n')).to.throw(/before the first "## Group"/);
    expect(() => parseEnvExample('## Empty\n## Group\n# PORT=8080  # the port\n')).to.throw(/"Empty" names no variable/);
  });
});

describe('.env.example as a file to copy to .env', () => {
  it('gives the configuration its defaults when every line is uncommented', () => {
    const uncommented = readFileSync(envExamplePath, 'utf8').split('\n')
      .map((line) => line.replace(/^#\s*(?=[A-Z][A-Z0-9_]+=)/, ''))
      .join('\n');
    const fromFile = parseEnv(uncommented) as Record<string, string>;
    expect(Object.keys(fromFile)).to.include.members(['PORT', 'PROVIDER_ACCOUNTS', 'PUSH_TIMEOUT_MS']);
    expect(Object.values(fromFile).filter((value) => value.includes('#')), 'a note read as part of a value').to.deep.equal([]);
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'env-example-'));
    try {
      expect(loadConfig({ ...fromFile, DATA_DIR: dataDir })).to.deep.equal(loadConfig({ DATA_DIR: dataDir }));
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
