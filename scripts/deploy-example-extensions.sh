#!/usr/bin/env bash
# Puts the example extensions (examples/extensions/) into this checkout's production list the way a
# deployment adds its own: each extension's folder, specs included, into src/extensions/<name>/ (its
# imports of the core made relative to src/; those of test/ support are the same from there), and one
# line each in src/extensions.ts, the list the API, the worker, the OpenAPI document and the migration
# CLI load. Nothing else under src/ changes; the script prints what it changed (`git status`, and the
# list's diff) so a run shows it.
#
# The examples' own modules declare their permissions, ids and codes once per process, so a test run
# over the deployed tree leaves out what imports them from examples/ as well (its specs there, and
# test/extending.e2e-spec.ts and src/extension.spec.ts, which load examples/extensions/index.ts): CI runs
# those on the tree as it is.
#
#   bash scripts/deploy-example-extensions.sh          # add them
#   bash scripts/deploy-example-extensions.sh --undo   # put src/extensions.ts back, remove the folders
#
# CI runs the whole suite on PostgreSQL between the two (.ci/run): an extension in the production list
# must break no core test.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--undo" ]; then
  git checkout -- src/extensions.ts
  rm -rf src/extensions
  exit 0
fi

[ ! -e src/extensions ] || { echo "src/extensions/ exists: run with --undo first" >&2; exit 1; }
git diff --quiet -- src/extensions.ts || { echo "src/extensions.ts has local changes" >&2; exit 1; }

imports=""
entries=""
for folder in examples/extensions/*/; do
  name=$(basename "$folder")
  mkdir -p "src/extensions/$name"
  for file in "$folder"*; do
    # From examples/extensions/<name>/ the core is ../../../src/; from src/extensions/<name>/ it is ../../.
    sed "s#'\.\./\.\./\.\./src/#'../../#g" "$file" >"src/extensions/$name/$(basename "$file")"
  done
  descriptor=$(ls "src/extensions/$name/"*.extension.ts)
  exported=$(sed -n 's/^export const \([A-Za-z0-9_]*\) = defineExtension(.*/\1/p' "$descriptor")
  [ -n "$exported" ] || { echo "no defineExtension export in $descriptor" >&2; exit 1; }
  imports+="import { $exported } from './extensions/$name/$(basename "$descriptor" .ts)';"$'\n'
  entries+="  $exported,"$'\n'
done

# The list's own line, `... = [];`, becomes one entry per extension.
node -e '
  const fs = require("fs");
  const [imports, entries] = process.argv.slice(1);
  const list = fs.readFileSync("src/extensions.ts", "utf8");
  const empty = /export const EXTENSIONS: readonly GatehouseExtension\[\] = \[\];/;
  if (!empty.test(list)) throw new Error("src/extensions.ts: the list is not the empty one this script fills");
  const filled = list.replace(empty, `export const EXTENSIONS: readonly GatehouseExtension[] = [\n${entries}];`);
  fs.writeFileSync("src/extensions.ts", imports + filled);
' "$imports" "$entries"

git status --short -- src
git --no-pager diff -- src/extensions.ts
