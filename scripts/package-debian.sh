#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Makes the Debian packages (cmake/Packaging.cmake says which, and what each holds) into
# OUTDIR with CPack, from the optimised build (build/, or $BUILD_DIR; configured and built
# first where there is none), installed under /usr, and checks them with lintian: an error
# fails, warnings are listed.
#   scripts/package-debian.sh OUTDIR
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || { echo "usage: scripts/package-debian.sh OUTDIR" >&2; exit 2; }
mkdir -p "$1"
out=$(cd "$1" && pwd)
build_dir=${BUILD_DIR:-build}
if [ -f "$build_dir/CMakeCache.txt" ]; then
  cmake -S . -B "$build_dir" -DCMAKE_INSTALL_PREFIX=/usr >/dev/null
else
  BUILD_DIR=$build_dir TEST_LABELS=sdk ./scripts/build.sh -DCMAKE_INSTALL_PREFIX=/usr \
    -DRDMAVIDEO_BUILD_BENCH=OFF
fi
cmake --build "$build_dir" -j"$(nproc)" >/dev/null
staging=$(mktemp -d)
trap 'rm -rf "$staging"' EXIT
(cd "$build_dir" && cpack -G DEB -B "$staging" >"$staging/cpack.log" 2>&1) ||
  { cat "$staging/cpack.log" >&2; exit 1; }
rm -f "$out"/*.deb
mv "$staging"/*.deb "$out"/
ls -1 "$out"/*.deb
if command -v lintian >/dev/null; then
  # Errors fail; the rest is listed (the closing notes of the packaging work list them too).
  lintian --fail-on error --tag-display-limit 0 "$out"/*.deb
fi
