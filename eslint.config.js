// The one lint configuration of the workspace.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '**/src/generated/**', 'bench/results/**'] },
  js.configs.recommended,
  ...tseslint.configs.strict,
  {
    languageOptions: { globals: { ...globals.node }, ecmaVersion: 2024, sourceType: 'module' },
    rules: {
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
      eqeqeq: ['error', 'always'],
      'no-console': 'error',
    },
  },
  {
    files: ['**/test/**/*.ts', 'test/**/*.ts'],
    languageOptions: { globals: { ...globals.mocha } },
    rules: {
      // Tests assert on `!` after checking presence with an assertion.
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  {
    // The operators' CLI prints text from the API: only its printer may write, and it escapes controls.
    files: ['packages/client/src/**/*.ts'],
    ignores: ['packages/client/src/cli/terminal.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        ...['stdout', 'stderr'].map((property) => ({ object: 'process', property, message: 'print through cli/terminal.ts, which escapes control and bidi characters' })),
      ],
    },
  },
  {
    // The services read their OpenAPI types from the SDK, which holds the one generated copy
    // (scripts/gen-types.ts); the SDK's code is no part of a service (it is a devDependency there).
    files: ['services/*/src/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { patterns: [{ group: ['@platform/client', '@platform/client/*'], allowTypeImports: true, message: 'a service takes only types from the SDK' }] },
      ],
    },
  },
  {
    // Identity's changes are made in transactions that keep the request's deadline (deadlineTransaction,
    // retryingTransaction over it), so that a 503 of the deadline never comes with a change committed after it.
    files: ['services/identity/src/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        ...["CallExpression[callee.property.name='transaction'][callee.object.name='db']", "CallExpression[callee.property.name='transaction'][callee.object.property.name='db']"].map((selector) => ({
          selector,
          message: 'open a transaction with deadlineTransaction or retryingTransaction (@platform/service-kit/database): it keeps the request\'s deadline',
        })),
      ],
    },
  },
  {
    // The benchmark measures the packages as they ship: through their entry points (package.json
    // `exports`), so a move inside a package cannot break it unseen.
    files: ['bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { patterns: [{ group: ['../gateway/*', '../services/*', '../packages/*', '../../gateway/*', '../../services/*', '../../packages/*'], message: "import the package's entry point (@platform/<name>/<entry>)" }] },
      ],
    },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs' },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    files: ['scripts/**/*.ts'],
    rules: { 'no-console': 'off' },
  },
);
