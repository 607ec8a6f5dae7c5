#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what is needed, builds with warnings as errors, and runs every test with CTest:
# first the unit, integration and GStreamer tests under AddressSanitizer and UBSan, then the whole
# suite in the optimised build, a short benchmark smoke run, and the fuzz targets (clang,
# libFuzzer) for a bounded time each.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh

# The sanitizer build is also the build without the CUDA toolkit (no kernels: the GPU
# features that need them say so, and their tests check that they do); the optimised build
# has the kernels.
echo "== sanitizer build (address, undefined; without the CUDA toolkit)"
BUILD_DIR=build-asan BUILD_TYPE=Debug ./scripts/build.sh -DRDMAVIDEO_WERROR=ON \
  -DRDMAVIDEO_SANITIZE=address,undefined -DRDMAVIDEO_WITH_CUDA=OFF
# G_SLICE=always-malloc: GLib's slice allocator would hide leaked GStreamer objects from LSan.
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 G_SLICE=always-malloc \
  LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp \
  ctest --test-dir build-asan -L 'unit|integration|gst' --output-on-failure --timeout 300

echo "== optimised build"
./scripts/build.sh -DRDMAVIDEO_WERROR=ON
python3 bench/run_tcp_bench.py --quick --build-dir build >/dev/null
python3 bench/run_gst_bench.py --quick --build-dir build >/dev/null
# Soaks (label soak) are left out: ctest --test-dir build -L soak runs them.
ctest --test-dir build -LE soak --output-on-failure --timeout 300

echo "== fuzzing (libFuzzer, ${FUZZ_SECONDS:-30} s a target)"
./scripts/fuzz.sh
