#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Cross-builds the Windows parts with Debian's MinGW-w64 (cmake/mingw-w64-x86_64.cmake) into
# build-windows/ (or $BUILD_DIR), as a unity build like scripts/build.sh's (UNITY=OFF: file by
# file). Extra arguments go to CMake. The tests run under wine:
#   ctest --test-dir build-windows
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build-windows}
launcher=()
if command -v ccache >/dev/null 2>&1; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" \
  -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/mingw-w64-x86_64.cmake" -DCMAKE_UNITY_BUILD="${UNITY:-ON}" \
  "${launcher[@]}" "$@" >/dev/null
cmake --build "$build_dir" -j"$(nproc)"
