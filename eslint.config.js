import path from 'node:path';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const DOMAIN = path.resolve('src/domain');
const DOMAIN_PACKAGES = new Set(['zod']);

/**
 * src/domain is pure: it may import zod and files inside src/domain, nothing else. Decided on the resolved
 * path of each import, so `../../eventstore/x` from a nested folder is caught like `../eventstore/x`, and a
 * domain folder named like an adapter folder (pairing, identity, agents) is told apart from the adapter.
 */
const domainPurity = {
  meta: {
    type: 'problem',
    messages: { impure: 'src/domain is pure: no I/O, no framework ({{source}} is outside src/domain).' },
  },
  create(context) {
    const check = (source) => {
      if (!source || typeof source.value !== 'string') return;
      const spec = source.value;
      const inside = spec.startsWith('.')
        ? path.resolve(path.dirname(context.filename), spec).startsWith(DOMAIN + path.sep)
        : DOMAIN_PACKAGES.has(spec);
      if (!inside) context.report({ node: source, messageId: 'impure', data: { source: spec } });
    };
    return {
      ImportDeclaration: (node) => check(node.source),
      ExportNamedDeclaration: (node) => check(node.source),
      ExportAllDeclaration: (node) => check(node.source),
      ImportExpression: (node) => check(node.source),
    };
  },
};

// A later config object's no-restricted-imports replaces an earlier one's for the same file, so every
// block below that sets the rule for files under src/ repeats this pattern.
const PRODUCT_STANDS_ALONE = {
  group: ['**/tools/**', '**/tests/**', '**/bench/**', '**/examples/**'],
  message: 'src/ is the product: it imports nothing from tools, tests, bench or examples.',
};

const WRITE_SIDE_READS_NO_READ_MODEL = {
  group: ['**/projections/**'],
  message: 'The write side decides from its own streams, never from a read model.',
};

export default tseslint.config(
  { ignores: ['node_modules/**', '.data/**', 'scratch/**', 'dist/**', 'tests/fixtures/lint/**'] },
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
    plugins: { local: { rules: { 'domain-purity': domainPurity } } },
    rules: {
      'local/domain-purity': 'error',
      'no-restricted-globals': ['error', { name: 'Date', message: 'Time comes in as an argument.' }],
    },
  },
  {
    // The product stands on its own: test, benchmark and soak tooling build on it, never the reverse.
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [PRODUCT_STANDS_ALONE] }],
    },
  },
  {
    // The write side decides from its own streams, never from a read model (docs/commands.md). Routing
    // lookups (which agent a message goes to) stay in src/ingress/control and src/ingress/downlink.ts.
    files: [
      'src/control/**/*.ts',
      'src/registry/**/*.ts',
      'src/pairing/**/*.ts',
      'src/agents/**/*.ts',
      'src/identity/**/*.ts',
      'src/ingress/uplink.ts',
    ],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [PRODUCT_STANDS_ALONE, WRITE_SIDE_READS_NO_READ_MODEL] },
      ],
    },
  },
  {
    // Readings go one way, broker -> uplink -> ingest: the uplink parses and hands the message on.
    files: ['src/ingress/readings/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            PRODUCT_STANDS_ALONE,
            WRITE_SIDE_READS_NO_READ_MODEL,
            { group: ['**/broker/**', '**/uplink.js'], message: 'Readings arrive parsed from the uplink.' },
          ],
        },
      ],
    },
  },
  {
    // The reference client is what an application would write: the public interface only.
    files: ['examples/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/src/**', '**/tests/**', '**/bench/**', '**/tools/**'],
              message: 'Examples use the public API only.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['tests/**/*.ts', 'bench/**/*.ts', 'src/cli/**/*.ts', 'bin/**/*.js'],
    rules: { 'no-console': 'off', '@typescript-eslint/no-unused-expressions': 'off' },
  },
);
