// Flat config: typescript-eslint's recommended rules, type-aware where it pays (floating promises).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    // Plain CommonJS configuration (Jest and its ts-jest transformer, dependency-cruiser's rules), outside
    // the TypeScript project.
    ignores: [
      'dist/**',
      'node_modules/**',
      'data/**',
      'coverage/**',
      '.test-build-*/**',
      '.bench-build-*/**',
      'test/.generated/**',
      'clients/*/dist/**',
      'eslint.config.mjs',
      'jest.config.js',
      '.dependency-cruiser.cjs',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      parserOptions: { project: './tsconfig.json', tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'warn',
      'no-console': ['error', { allow: ['error', 'warn'] }],
    },
  },
  {
    // The dashboard is a browser app with its own tsconfig (DOM, Preact JSX). Nothing in it may log:
    // tokens and new key values must never reach a console.
    files: ['dashboard/**/*.{ts,tsx}'],
    languageOptions: {
      parserOptions: { project: './dashboard/tsconfig.json', tsconfigRootDir: import.meta.dirname },
    },
    rules: { 'no-console': ['error', {}] },
  },
  {
    // The typed client (clients/typescript) is a package of its own, with its own tsconfig (DOM's fetch
    // types, no Jest).
    files: ['clients/typescript/**/*.ts'],
    languageOptions: {
      parserOptions: { project: './clients/typescript/tsconfig.json', tsconfigRootDir: import.meta.dirname },
    },
  },
  {
    // The README's agent (examples/agent), service (examples/verify-service), stand-in model server
    // (examples/model-server) and A2A orchestrator (examples/a2a): plain JavaScript for Node 20, run as printed, outside the TypeScript
    // project, so linted without type information and with Node's globals.
    files: [
      'examples/agent/**/*.mjs',
      'examples/verify-service/**/*.mjs',
      'examples/model-server/**/*.mjs',
      'examples/a2a/**/*.mjs',
    ],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      parserOptions: { project: false },
      globals: {
        process: 'readonly',
        console: 'readonly',
        fetch: 'readonly',
        FormData: 'readonly',
        Blob: 'readonly',
        Headers: 'readonly',
      },
    },
  },
  {
    // Scripts npm runs before the build exists (scripts/build-if-stale.js) and jest's resolver
    // (test/support/jest-resolver.js): plain CommonJS for Node 20, outside the TypeScript project, so
    // linted without type information.
    files: ['scripts/**/*.js', 'test/support/**/*.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      sourceType: 'commonjs',
      parserOptions: { project: false },
      globals: {
        require: 'readonly',
        module: 'writable',
        __dirname: 'readonly',
        console: 'readonly',
      },
    },
    rules: {
      ...tseslint.configs.disableTypeChecked.rules,
      '@typescript-eslint/no-require-imports': 'off',
      'no-console': 'off',
    },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts', '**/*.spec.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
      'no-console': 'off',
    },
  },
);
