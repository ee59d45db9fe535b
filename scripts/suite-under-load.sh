#!/usr/bin/env bash
# The whole suite as CI runs it on PostgreSQL + Redis, beside a parallel `npm run bench` that loops until the
# suite ends: how the suite is shown to hold on a busy machine (tests wait for events, never for durations).
#
#   bash scripts/suite-under-load.sh [runs=1]     # from the project root; results in ./.load-runs/
#
# Needs PostgreSQL on 127.0.0.1:5432 (databases test and postgres, trust auth), Redis on 6379, and a build
# (npm run build: the dashboard's browser tests use dist/dashboard).
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-1}
out=.load-runs
mkdir -p "$out"
window_day=$(date -u -d '+12 hours' '+%A' | tr '[:upper:]' '[:lower:]')
window_at=$(date -u -d '+12 hours' '+%H:%M')
status=0
for run in $(seq 1 "$runs"); do
  setsid bash -c 'while true; do DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres npm run bench >>"$0" 2>&1; done' \
    "$out/bench.log" &
  loader=$!
  started=$SECONDS
  GATEHOUSE_TEST_EXTENSIONS=examples MAINTENANCE_WINDOW_WEEKDAY="$window_day" MAINTENANCE_WINDOW_FROM="$window_at" \
    MAINTENANCE_WINDOW_MINUTES=1 DATABASE_URL=postgresql://postgres@127.0.0.1:5432/test \
    REDIS_URL=redis://127.0.0.1:6379 CI=true \
    npm test -- --json --outputFile="$out/run-$run.json" >"$out/run-$run.log" 2>&1
  code=$?
  kill -- -"$loader" 2>/dev/null
  wait "$loader" 2>/dev/null
  node -e '
    const r = require(process.argv[1]);
    console.log(`run ${process.argv[2]}: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${process.argv[3]} s`);
  ' "$PWD/$out/run-$run.json" "$run" "$((SECONDS - started))" || echo "run $run: no results (exit $code)"
  [ "$code" -eq 0 ] || status=1
done
exit "$status"
