#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs clang-tidy's curated checks (.clang-tidy) over the product's C++ sources (not the tests)
# with the compile commands of a configured build folder (build/, or $BUILD_DIR), several files
# at a time. Any finding fails the run; a finding that is a false positive is silenced where it
# is, with NOLINT(check) and the reason.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
[ -f "$build_dir/compile_commands.json" ] ||
  { echo "check-lint: no $build_dir/compile_commands.json (run scripts/build.sh first)" >&2; exit 2; }
# The sources the build compiles, under the product's folders (a part not built here, such as
# one whose library is missing, is not linted).
mapfile -t files < <(python3 - "$build_dir/compile_commands.json" <<'PY'
import json, os, sys
root = os.getcwd()
product = ("lib/", "codecs/", "cli/", "sender/", "receiver/", "doctor/", "gst-plugin/", "obs-plugin/")
seen = set()
for e in json.load(open(sys.argv[1])):
    f = os.path.relpath(os.path.join(e["directory"], e["file"]), root)
    if f.endswith(".cpp") and f.startswith(product) and f not in seen:
        seen.add(f)
        print(f)
PY
)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if printf '%s\0' "${files[@]}" |
    xargs -0 -n 1 -P "$(nproc)" clang-tidy -p "$build_dir" --quiet >"$log" 2>&1; then
  echo "lint: ${#files[@]} files, no findings"
else
  grep -E "(warning|error):" "$log" | sort -u >&2 || cat "$log" >&2
  echo "lint: findings above (.clang-tidy lists the checks)" >&2
  exit 1
fi
