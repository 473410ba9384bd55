import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.data/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      'no-console': ['error', { allow: ['error'] }],
    },
  },
  { files: ['scripts/**/*.ts'], rules: { 'no-console': 'off' } },
  { files: ['test/**/*.ts'], rules: { 'no-console': 'off', '@typescript-eslint/no-explicit-any': 'off' } },
);
