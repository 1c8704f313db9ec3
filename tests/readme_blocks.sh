#!/usr/bin/env bash
# Runs README.md's runnable blocks exactly as written, against the release binaries.
#
# The marker: a fenced ```sh block is runnable when the line just before its opening fence is
#
#     <!-- runnable -->
#
# (an HTML comment, so GitHub shows nothing). Blocks without the marker (the build, the test
# suite, Docker) are not run here: CI runs `cargo build` and `cargo test` itself. Every runnable
# block is printed, then all of them run in order in one `bash -euo pipefail` (so a later block
# sees what an earlier one wrote), in a fresh temporary folder that stands for the repository
# root: `target` there is a link to the build's target folder ($CARGO_TARGET_DIR, else the
# repository's target/) and `data` a link to the bundled datasets, so `target/release/dpagg-…`
# and `data/…` mean what they mean at the root, while everything the blocks write (`results/…`)
# goes to the temporary folder, removed at the end. Build first: `cargo build --release`.
# Keep the runnable blocks quick (the quick start's demo): CI allows them `README_TIMEOUT`
# seconds, 300 by default. Processes left behind by a failure are stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
page=README.md
target="${CARGO_TARGET_DIR:-$root/target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac
for bin in dpagg-node dpagg-aggregator; do
  if [ ! -x "$target/release/$bin" ]; then
    echo "readme_blocks.sh: $target/release/$bin is missing: run cargo build --release first" >&2
    exit 1
  fi
done
blocks="$(awk '
  /^<!-- runnable -->[[:space:]]*$/ { armed = 1; next }
  armed && /^```sh[[:space:]]*$/ { inside = 1; armed = 0; n++; print "# --- runnable block " n; next }
  inside && /^```[[:space:]]*$/ { inside = 0; next }
  inside { print; next }
  { armed = 0 }
' "$page")"
count="$(grep -c '^# --- runnable block ' <<<"$blocks" || true)"
if [ "$count" -eq 0 ]; then
  echo "readme_blocks.sh: no \`\`\`sh block right after <!-- runnable --> in $page" >&2
  exit 1
fi
echo "readme_blocks.sh: $count runnable block(s) of $page:"
printf '%s\n' "$blocks" | sed 's/^/    /'
work="$(mktemp -d)"
ln -s "$target" "$work/target"
ln -s "$root/data" "$work/data"
(cd "$work" && exec setsid timeout "${README_TIMEOUT:-300}" bash -euo pipefail -c "$blocks") &
pid=$!
trap 'kill -- "-$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
if ! wait "$pid"; then
  echo "readme_blocks.sh: a runnable block of $page failed (or ran out of time)" >&2
  exit 1
fi
echo "readme_blocks.sh: every runnable block of $page ran"
