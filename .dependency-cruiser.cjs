// The layering CI enforces (`npm run lint:layers`, in .ci/run beside lint and the type check). Type-only
// imports count (tsPreCompilationDeps): a type that names a module ties the two as surely as a value.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment:
        'No import cycle in src/: a cycle means neither module can be read, tested or moved without ' +
        'the other, and at run time one of them sees the other half-loaded.',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'base-layer-imports-upward',
      severity: 'error',
      comment:
        'src/common/ and src/config/ are the base layer: every module may import them, so they import ' +
        'nothing else of src/ (a feature type they need moves down, or the feature declares it).',
      from: { path: '^src/(common|config)/' },
      to: { path: '^src/', pathNot: '^src/(common|config)/' },
    },
    {
      name: 'src-imports-tests-or-examples',
      severity: 'error',
      comment:
        'What ships (src/, built into dist/) never imports test/ or examples/. Specs beside the code ' +
        "(*.spec.ts, and an extension's *.e2e-spec.ts) are tests and may use test/support.",
      from: { path: '^src/', pathNot: '\\.(spec|e2e-spec|medium-spec)\\.ts$' },
      to: { path: '^(test|examples)/' },
    },
    {
      name: 'feature-imports-another-features-repository',
      severity: 'error',
      comment:
        "A repository is its module's own: another module reads those tables through the owning " +
        "module's service (or a provider it exports for that), never by injecting its repository.",
      from: { path: '^src/([^/]+)/' },
      to: { path: '^src/.+\\.repository\\.ts$', pathNot: '^src/$1/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.json'] },
  },
};
