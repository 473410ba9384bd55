import js from '@eslint/js';
import importX from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

/**
 * The floors of ARCHITECTURE.md, from the top: what each folder must not import. A folder imports
 * only the floors below it; `api/` and `workers/` stand side by side and never import each other.
 */
const below = {
  'common/': 'the configuration only',
  'db/': 'common/ and the configuration: Postgres code only',
  'media/': 'common/ and the configuration',
  'clients/': 'common/ and the configuration: a client of the outside world knows nothing of our tables or files',
  'pool/': 'db/, clients/ and common/',
  'services/': 'pool/, db/, media/, clients/ and common/',
  'simulators/': 'clients/ (the protocols they mirror), media/ and common/',
};
const everything = ['main.ts', 'process', 'scripts', 'test', 'api', 'workers', 'services', 'pool', 'db', 'media', 'clients', 'simulators', 'common', 'migrations'];
/** What each folder may import besides itself; ARCHITECTURE.md's floors table says the same (a test compares them). */
export const allowed = {
  common: [],
  db: ['common'],
  media: ['common'],
  clients: ['common'],
  pool: ['db', 'clients', 'common'],
  services: ['pool', 'db', 'media', 'clients', 'common'],
  simulators: ['clients', 'media', 'common'],
  // The simulators only where the embedded default starts them: the web role mounts the payment
  // processor's, a worker without PROVIDER_URL starts the provider's (each a lazy import).
  api: ['services', 'pool', 'db', 'media', 'clients', 'common', 'simulators'],
  workers: ['services', 'pool', 'db', 'media', 'clients', 'common', 'simulators'],
  process: ['api', 'workers', 'services', 'pool', 'db', 'media', 'clients', 'simulators', 'common'],
  scripts: ['process', 'api', 'workers', 'services', 'pool', 'db', 'media', 'clients', 'simulators', 'common', 'migrations'],
};
const zones = Object.entries(allowed).flatMap(([folder, may]) => everything
  .filter((other) => other !== folder && !may.includes(other))
  .map((other) => ({
    target: `./${folder}`,
    from: `./${other}`,
    message: `${folder}/ must not import ${other}${other.endsWith('.ts') ? '' : '/'}${below[`${folder}/`] ? `: it stands on ${below[`${folder}/`]}` : ''} (ARCHITECTURE.md, "Floors").`,
  })));

export default tseslint.config(
  { ignores: ['dist/**', '.dist-*/**', 'node_modules/**', '.data/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      'no-console': ['error', { allow: ['error'] }],
    },
  },
  { files: ['scripts/**/*.ts', 'scripts/**/*.mjs'], rules: { 'no-console': 'off' } },
  // Plain Node scripts that run before anything is compiled (scripts/build.mjs).
  { files: ['**/*.mjs'], languageOptions: { globals: { process: 'readonly', console: 'readonly' } } },
  {
    files: ['**/*.ts'],
    plugins: { 'import-x': importX },
    settings: { 'import-x/resolver': { node: { extensions: ['.ts', '.js'] } } },
    rules: {
      'import-x/no-restricted-paths': ['error', { zones }],
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
    },
  },
  // No statement of ours reads or writes pg-boss's own tables: its public API does (fetch, complete,
  // fail, cancel, resume, findJobs, getJobById, deleteAllJobs...), so that a new pg-boss release is a
  // version bump of pg-boss and its dashboard. Migrations that moved data in the past keep their SQL.
  {
    files: ['**/*.ts'],
    ignores: ['migrations/**', 'db/boss.ts', 'db/boss-upgrade.ts', 'test/db/boss-upgrade.test.ts'],
    rules: {
      'no-restricted-syntax': ['error',
        { selector: 'Literal[value=/\\bpgboss\\./]', message: 'SQL on pg-boss\'s tables: use pg-boss\'s API instead (db/queues.ts bossIn for a shared transaction).' },
        { selector: 'TemplateElement[value.raw=/\\bpgboss\\./]', message: 'SQL on pg-boss\'s tables: use pg-boss\'s API instead (db/queues.ts bossIn for a shared transaction).' },
        { selector: 'Identifier[name="bossSchema"]', message: 'pg-boss\'s schema is pg-boss\'s own: use its API instead.' },
      ],
    },
  },
  // chai's property assertions (`expect(x).to.be.true`) read as bare expressions.
  { files: ['test/**/*.ts'], rules: { 'no-console': 'off', '@typescript-eslint/no-explicit-any': 'off', '@typescript-eslint/no-unused-expressions': 'off' } },
);
