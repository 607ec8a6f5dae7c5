#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Checks that every C and C++ source in the repository is in the project's format
# (.clang-format). Lists the files that are not and exits 1; `scripts/check-format.sh --fix`
# formats them in place.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.c' '*.h' '*.cpp' '*.hpp' '*.cu' '*.cuh')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
# One clang-format for every file; each line it writes about a file that is off names it.
mapfile -t bad < <(clang-format --dry-run -Werror "${files[@]}" 2>&1 |
  sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error:.*/\1/p' | sort -u)
if [ ${#bad[@]} -gt 0 ]; then
  echo "not in the project's format (.clang-format; scripts/check-format.sh --fix formats them):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "format: ${#files[@]} files in the project's format"
