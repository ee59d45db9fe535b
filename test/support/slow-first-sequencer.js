/**
 * jest's order of test files, with one change for a run that has no timings yet (a clean clone, as CI runs):
 * the suites known to take longest start first.
 *
 * jest runs the slowest files first when its cache holds their durations, and otherwise the largest files
 * first. Size misleads here: the suites that start real processes (the guides' servers, the entry point's
 * lifecycle) are small files that run for minutes, and on a clean clone one of them started two thirds of
 * the way through the run and ended it about 70 s after everything else. With timings in the cache (any
 * second run on a machine) jest's own order stands.
 */
const { relative } = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;

/** Slowest first, as measured on a whole run (rounded seconds on 2 shared cores, three workers). */
const SLOW_SUITES = [
  'test/docs-guides.e2e-spec.ts', // 150 s: every runnable block of the guides against real processes
  'test/process-lifecycle.e2e-spec.ts', // 125 s: the entry point started, drained and stopped
  'test/webhooks.e2e-spec.ts', // 80 s
  'test/faults/credits-redis-stop.e2e-spec.ts', // 80 s: a Redis of its own stopped and started
  'test/agents-tasks.e2e-spec.ts', // 65 s
  'test/medium/embedded-postgres.medium-spec.ts', // 60 s
  'test/process-start.e2e-spec.ts', // 60 s: the entry point started with each refusal
];

class SlowFirstSequencer extends Sequencer {
  sort(tests) {
    const sorted = super.sort(tests);
    if (sorted.some((test) => test.duration != null)) return sorted;
    const rank = (test) => {
      const index = SLOW_SUITES.indexOf(relative(test.context.config.rootDir, test.path));
      return index === -1 ? SLOW_SUITES.length : index;
    };
    // Array.prototype.sort is stable: the rest keep jest's order (largest file first).
    return [...sorted].sort((a, b) => rank(a) - rank(b));
  }
}

module.exports = SlowFirstSequencer;
