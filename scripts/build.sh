#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configures and builds into build/ (or $BUILD_DIR; $BUILD_TARGETS, space-separated, builds
# only those; $TEST_LABELS, a ;-list of CTest labels, builds only the test programs with those
# labels, and unset builds them all). Each library and program is compiled as a unity build
# (its files several to a compile, a third of the time; UNITY=OFF compiles them one by one, for
# a quicker rebuild after a change to one file). Extra arguments go to CMake. Compiles go
# through ccache where it is installed (scripts/setup.sh installs it): a rebuild of what did
# not change, in any build folder, is a cache hit. Links go through lld where it is installed
# (setup installs it too).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
launcher=()
if command -v ccache >/dev/null 2>&1; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}  # paths under the checkout hash as relative
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
            -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
linker=()
if command -v ld.lld >/dev/null 2>&1; then
  linker=(-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld
          -DCMAKE_MODULE_LINKER_FLAGS=-fuse-ld=lld)
fi
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" \
  -DRDMAVIDEO_TEST_LABELS="${TEST_LABELS:-}" -DCMAKE_UNITY_BUILD="${UNITY:-ON}" \
  "${launcher[@]}" "${linker[@]}" "$@" >/dev/null
targets=()
for t in ${BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j"$(nproc)" "${targets[@]}"
