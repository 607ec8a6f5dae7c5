#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Writes the C API's ABI baseline, sdk/abi/librdmavideo.so.0.abi, from a built library
# (default build/sdk/librdmavideo.so.0) with libabigail's abidw: the exported functions and
# the types of the public header, without locations. CI (the sdk_abi test) compares every
# build against it with abidiff. Renew it when a release adds to the API, or with a new
# SONAME when a change breaks it (docs/sdk.md, "The ABI promise").
set -euo pipefail
cd "$(dirname "$0")/.."
library=${1:-build/sdk/librdmavideo.so.0}
command -v abidw >/dev/null || { echo "abi-baseline: abidw not found (apt install abigail-tools)" >&2; exit 2; }
abidw --headers-dir sdk/include/rdmavideo --drop-private-types --exported-interfaces-only \
  --no-show-locs --no-comp-dir-path --no-corpus-path "$library" \
  --out-file sdk/abi/librdmavideo.so.0.abi
# The translation units' paths name the build folder: kept relative to it.
sed -i -E "s#(<abi-instr [^>]*path=')[^']*/(sdk/CMakeFiles/)#\\1\\2#" sdk/abi/librdmavideo.so.0.abi
echo "abi-baseline: sdk/abi/librdmavideo.so.0.abi from $library"
