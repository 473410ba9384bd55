import js from '@eslint/js';
import tseslint from 'typescript-eslint';

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
  // The layers (ARCHITECTURE.md): `api/` (HTTP) and `workers/` (job consumers) are two fronts over
  // `db/`, `pool/`, `media/` and `services.ts`; neither front imports the other, and nothing below
  // them (nor the simulators of the outside world) imports either front.
  { files: ['workers/**/*.ts'], rules: { 'no-restricted-imports': ['error', { patterns: [{ regex: '^(\\.\\./)+api(/|$)', message: 'workers/ must not import api/: move what both roles use below them (db/, pool/, media/).' }] }] } },
  { files: ['api/**/*.ts'], rules: { 'no-restricted-imports': ['error', { patterns: [{ regex: '^(\\.\\./)+workers(/|$)', message: 'api/ must not import workers/: move what both roles use below them (db/, pool/, media/).' }] }] } },
  {
    files: ['db/**/*.ts', 'pool/**/*.ts', 'media/**/*.ts', 'simulators/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [{ regex: '^(\\.\\./)+(api|workers)(/|$)', message: 'The layers below the roles must not import api/ or workers/.' }] }] },
  },
  // chai's property assertions (`expect(x).to.be.true`) read as bare expressions.
  { files: ['test/**/*.ts'], rules: { 'no-console': 'off', '@typescript-eslint/no-explicit-any': 'off', '@typescript-eslint/no-unused-expressions': 'off' } },
);
