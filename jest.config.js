/** Unit specs live beside the code; e2e specs in test/ boot the real AppModule against PostgreSQL or PGlite. */
// The e2e and medium suites compile with the @nestjs/swagger plugin, as `nest build` does.
const tsJest = ['ts-jest', { tsconfig: 'tsconfig.json' }];
const tsJestWithOpenApi = [
  'ts-jest',
  {
    tsconfig: 'tsconfig.e2e.json',
    astTransformers: { before: ['<rootDir>/test/support/openapi-plugin.js'] },
  },
];
module.exports = {
  // Booting an app on PGlite takes a few seconds on a loaded 2-core machine.
  testTimeout: 60000,
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      rootDir: '.',
      testMatch: ['<rootDir>/src/**/*.spec.ts'],
      transform: { '^.+\\.ts$': tsJest },
    },
    {
      displayName: 'e2e',
      testEnvironment: 'node',
      rootDir: '.',
      // examples/extensions: each example extension's own test, in its folder.
      testMatch: ['<rootDir>/test/**/*.e2e-spec.ts', '<rootDir>/examples/extensions/**/*.e2e-spec.ts'],
      transform: { '^.+\\.ts$': tsJestWithOpenApi },
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
    },
    {
      // Service-level tests: real modules and a real database, no HTTP (see startServiceContext).
      displayName: 'medium',
      testEnvironment: 'node',
      rootDir: '.',
      testMatch: ['<rootDir>/test/medium/**/*.medium-spec.ts'],
      // No OpenAPI here: services are called directly, so each file compiles alone (isolatedModules),
      // without the whole program the swagger plugin needs (about 7 s of CPU per jest process).
      transform: { '^.+\\.ts$': tsJest },
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
    },
  ],
};
