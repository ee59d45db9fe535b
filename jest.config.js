/** Unit specs live beside the code; e2e specs in test/ boot the real AppModule against PostgreSQL or PGlite. */
// Every file compiles alone (tsconfig.json sets isolatedModules, so ts-jest transpiles without a
// program): type errors are `npm run typecheck`'s job. Tests that read the OpenAPI document load the
// @nestjs/swagger plugin's metadata first (test/support/openapi-metadata.ts).
const tsJest = ['ts-jest', { tsconfig: 'tsconfig.json' }];
// jose as CommonJS for @a2a-js/sdk's CommonJS build, which jest cannot otherwise load (see the file).
const resolver = '<rootDir>/test/support/jest-resolver.js';
// Where tests and the code they load live: jest crawls only these (not node_modules' 40,000 files, nor
// dist/ or the dashboard), which takes about 0.1 s off the start of every run.
const roots = ['<rootDir>/src', '<rootDir>/test', '<rootDir>/examples'];
module.exports = {
  // jest's order, but on a run without timings (a clean clone) the suites known to be slow start first.
  testSequencer: '<rootDir>/test/support/slow-first-sequencer.js',
  // The one test timeout, for every suite: a net for a test that hangs, never a measure of speed. Tests
  // wait for the event they are about (polled, with generous deadlines), and a loaded 2-core machine
  // stretches a suite's boots and fault trials several times over; a file that needs more says why.
  testTimeout: 300_000,
  // A run's compiled app and generated metadata (test/support/compiled-app.ts, openapi-metadata.ts).
  watchPathIgnorePatterns: ['<rootDir>/\\.test-build-', '<rootDir>/test/\\.generated/'],
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      rootDir: '.',
      roots,
      testMatch: ['<rootDir>/src/**/*.spec.ts'],
      transform: { '^.+\\.ts$': tsJest },
      resolver,
    },
    {
      displayName: 'e2e',
      testEnvironment: 'node',
      rootDir: '.',
      roots,
      // An extension's own e2e specs sit in its folder: under src/ for a deployment's, under
      // examples/extensions for the examples (tsconfig.build.json leaves them out of the build).
      testMatch: [
        '<rootDir>/test/**/*.e2e-spec.ts',
        '<rootDir>/src/**/*.e2e-spec.ts',
        '<rootDir>/examples/extensions/**/*.e2e-spec.ts',
      ],
      transform: { '^.+\\.ts$': tsJest },
      resolver,
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
    },
    {
      // Service-level tests: real modules and a real database, no HTTP (see startServiceContext).
      displayName: 'medium',
      testEnvironment: 'node',
      rootDir: '.',
      roots,
      testMatch: [
        '<rootDir>/test/medium/**/*.medium-spec.ts',
        '<rootDir>/src/**/*.medium-spec.ts',
        '<rootDir>/examples/extensions/**/*.medium-spec.ts',
      ],
      transform: { '^.+\\.ts$': tsJest },
      resolver,
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
    },
  ],
};
