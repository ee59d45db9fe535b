/**
 * Running the README's ```bash blocks as written: a prelude for a script under `set -euo pipefail` whose
 * `curl` fails the script on an unexpected HTTP status, and the convention that marks the refusals the
 * README shows on purpose (a command whose last line ends with `# <status>` must answer exactly that).
 */

/** The ```bash blocks of the README from `heading` (the whole line, e.g. `## When a key leaks`) to the next heading of its level or above. */
export function bashBlocksOfSection(readme: string, heading: string): string[] {
  const level = /^#+/.exec(heading)![0].length;
  const start = readme.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`README has no "${heading}" section`);
  const rest = readme.slice(start + heading.length + 2);
  // The next heading of this level or above, outside fenced blocks (their `# comment` lines end nothing).
  const next = new RegExp(`(?:^\`\`\`[^\\n]*\\n[\\s\\S]*?^\`\`\`$|^#{1,${level}} )`, 'gm');
  let end = rest.length;
  for (const m of rest.matchAll(next)) {
    if (!m[0].startsWith('```')) {
      end = m.index;
      break;
    }
  }
  return [...rest.slice(0, end).matchAll(/^```bash\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
}

/** Marks the curl calls of a command documented with a trailing `# <status>` comment as expecting it. */
export function withExpectedStatuses(block: string): string {
  const lines = block.split('\n');
  for (let first = 0; first < lines.length;) {
    let last = first;
    while (last < lines.length - 1 && lines[last].endsWith('\\')) last++;
    const status = /^(?!\s*#).*\s#\s*([1-5]\d\d)\b/.exec(lines[last])?.[1];
    for (let i = first; status && i <= last; i++) {
      lines[i] = lines[i].replace(/(^|[\s($|;&])curl(?=\s)/g, `$1README_EXPECT_STATUS=${status} curl`);
    }
    first = last + 1;
  }
  return lines.join('\n');
}

export const README_BASH_PRELUDE = `set -euo pipefail
shopt -s inherit_errexit

# curl that fails on an unexpected HTTP status (2xx, or README_EXPECT_STATUS when set), showing the body.
curl() {
  local headers body status rc=0
  headers=$(mktemp) body=$(mktemp)
  command curl -D "$headers" "$@" >"$body" || rc=$?
  status=$(awk '/^HTTP\\//{ s = $2 } END { print s }' "$headers")
  cat "$body"
  if [ "$rc" -ne 0 ]; then
    echo "README walkthrough: curl exited $rc: curl $*" >&2
  elif [ -n "\${README_EXPECT_STATUS:-}" ] && [ "$status" != "$README_EXPECT_STATUS" ]; then
    echo "README walkthrough: HTTP $status, expected $README_EXPECT_STATUS: curl $*" >&2
    rc=1
  elif [ -z "\${README_EXPECT_STATUS:-}" ] && [[ "$status" != 2?? ]]; then
    echo "README walkthrough: HTTP $status: curl $*" >&2
    rc=1
  fi
  [ "$rc" -eq 0 ] || cat "$body" >&2
  rm -f "$headers" "$body"
  return "$rc"
}

# Every variable a block assigned holds a value.
readme_check_vars() {
  local name
  for name in "$@"; do
    case "\${!name-}" in
      '' | undefined | null)
        echo "README walkthrough: $name is '\${!name-}' after block $README_BLOCK" >&2
        exit 1
        ;;
    esac
  done
}
`;
