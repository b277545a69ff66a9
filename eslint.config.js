import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/**', '.data/**', 'scratch/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'error',
    },
  },
  {
    files: ['src/domain/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: [
                'node:*',
                'pg',
                'express',
                'mqtt',
                'aedes',
                'pino',
                '../eventstore/*',
                '../api/*',
                '../projections/*',
                '../ingress/*',
                '../infra/*',
              ],
              message: 'src/domain is pure: no I/O, no framework.',
            },
          ],
        },
      ],
      'no-restricted-globals': ['error', { name: 'Date', message: 'Time comes in as an argument.' }],
    },
  },
  {
    files: ['tests/**/*.ts', 'bench/**/*.ts', 'src/cli/**/*.ts', 'bin/**/*.js'],
    rules: { 'no-console': 'off', '@typescript-eslint/no-unused-expressions': 'off' },
  },
);
