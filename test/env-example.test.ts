import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const root = path.join(__dirname, '..', '..');

/** Every variable `config.ts` reads, as written in its calls: `integer(env, 'PORT', …)`. */
function variablesReadByConfig(): string[] {
  const source = readFileSync(path.join(root, 'config.ts'), 'utf8');
  return [...new Set([...source.matchAll(/\(env, '([A-Z][A-Z0-9_]+)'/g)].map((match) => match[1]))].sort();
}

describe('.env.example', () => {
  it('lists every variable the configuration module reads, and nothing else', () => {
    const listed = readFileSync(path.join(root, '.env.example'), 'utf8')
      .split('\n')
      .map((line) => /^#?\s*([A-Z][A-Z0-9_]+)=/.exec(line)?.[1])
      .filter((name): name is string => Boolean(name))
      .sort();
    expect(listed).to.deep.equal(variablesReadByConfig());
  });
});
