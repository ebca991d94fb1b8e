// ESLint over the TypeScript in src/, test/, scripts/ and portal/, with typescript-eslint's
// type-checked recommended rules; the plain JavaScript (scripts, this file) gets the untyped ones.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // Generated code, build output and the examples (their own packages) are not linted here.
  { ignores: ['dist/', 'generated/', 'examples/', 'node_modules/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        // The two programs `npm run typecheck` checks: the root tsconfig.json covers only src/ and
        // generated/, so the project service (nearest tsconfig.json) would miss test/ and scripts/.
        project: ['./tsconfig.check.json', './portal/tsconfig.json'],
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // Fastify hooks and the store interface are async by contract, awaiting or not.
      '@typescript-eslint/require-await': 'off',
      // Stores, metrics and listeners are objects of closures, not classes: no `this` to lose.
      '@typescript-eslint/unbound-method': 'off',
      // Async callbacks handed to timers and listeners catch their own failures.
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      // `const { dropped: _, ...rest } = value` is how a field is left out of a copy.
      '@typescript-eslint/no-unused-vars': ['error', { ignoreRestSiblings: true }],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { ...tseslint.configs.disableTypeChecked.languageOptions, globals: globals.node },
  },
  {
    // node-postgres types its type parsers as any and its oids as an enum, while it hands a
    // custom parser plain numbers.
    files: ['src/store/postgres/connect.ts', 'test/helpers/stores.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-enum-comparison': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    // The tests, and the harness they share with the scripts (scripts/lib/: the process helper,
    // the response check, the crash test and the fuzzer's HTTP surface).
    files: ['test/**/*.ts', 'scripts/lib/**/*.ts'],
    rules: {
      // Tests read JSON bodies and rows as any, on purpose, then assert their exact shape.
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
      // tap awaits the tests it is handed (`t.test(...)`, top-level `test(...)`) itself.
      '@typescript-eslint/no-floating-promises': 'off',
      // Test names and messages interpolate whatever value they report.
      '@typescript-eslint/restrict-template-expressions': 'off',
      '@typescript-eslint/restrict-plus-operands': 'off',
      '@typescript-eslint/no-base-to-string': 'off',
    },
  },
  {
    files: ['scripts/**/*.ts'],
    rules: {
      // The bench passes loosely typed values through on purpose: query parameters, optional
      // databases and child processes gathered into one Promise.all.
      '@typescript-eslint/await-thenable': 'off',
      '@typescript-eslint/no-base-to-string': 'off',
      '@typescript-eslint/restrict-template-expressions': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
    },
  },
);
