#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what is needed, checks the format, builds with warnings as errors, lints the product's
# sources (clang-tidy over the optimised build's compile commands; a file that passed before is
# not linted again until it or what it includes changes), and runs every test with CTest, each
# in the build that suits it and once (each build, a unity build, compiles only the test
# programs of the labels it runs):
#   - the sanitizer build (clang: AddressSanitizer, UBSan, and libFuzzer's coverage, so that the
#     same build gives the fuzz targets; without the CUDA toolkit) runs the unit, integration,
#     GStreamer and kernels tests, several at a time, while the lint runs beside them (the tests
#     wait on their peers a third of the time);
#   - the Windows build (MinGW-w64, scripts/build-windows.sh) runs its unit tests under wine,
#     and rdmavideo-send.exe runs under wine into the optimised build's receiver;
#   - the optimised build (GCC, with the CUDA kernels) runs the kernels tests again (the kernels
#     change what they run) and the gpu tests (which skip, saying why, without a GPU), and the
#     SDK's (label sdk: installed, the examples built out of tree against it, and the Python
#     module with Debian's numpy); then, one at a time, the tests that measure time (label
#     timing) and the Soft-RoCE lab (label rxe); and a short benchmark smoke run.
# Then the Debian packages are made from the optimised build (scripts/package-debian.sh,
# lintian errors fail) and installed with apt into a fresh Debian 12 root, where the programs,
# the GStreamer plugin, the examples and the Python module are tried, and purged
# (tests/debian/install_test.sh; the base root is made once and cached); beside that, the fuzz
# targets (libFuzzer, from the sanitizer build) run for a bounded time each.
# The optimised and Windows builds carry line tables (-g1), not full debug information, which
# would add a third to their compile time; scripts/build.sh alone builds with -g.
# Soaks (label soak) are left out: ctest --test-dir build -L soak runs them. Each stage's time
# is printed as it ends, and all of them at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

stages=()
stage_start=$SECONDS
stage() {  # stage NAME: ends the running stage (printing its time) and names the next
  local now=$SECONDS
  if [ -n "${stage_name:-}" ]; then
    stages+=("$(printf '%-46s %4d s' "$stage_name" $((now - stage_start)))")
    echo "== $stage_name: $((now - stage_start)) s"
  fi
  stage_name=${1:-}
  stage_start=$now
  [ -z "$stage_name" ] || echo "== $stage_name"
}
free_mib() { df -Pm . | awk 'NR == 2 { print $4 }'; }
report() {
  local status=$?
  stage
  echo "== stage times"
  printf '%s\n' "${stages[@]}"
  printf '%-46s %4d s\n' total "$SECONDS"
  # A full disk ends a compile or a test with whatever message the tool has for it.
  if [ "$status" -ne 0 ] && [ "$(free_mib)" -lt 2048 ]; then
    echo "test: the disk is full ($(free_mib) MiB free under $PWD), which may be why" >&2
  fi
}
trap report EXIT

parallel=$(( $(nproc) + 1 ))
# A clean clone elsewhere still hits the compiler cache (debug information then names the
# folder that compiled it first), but for the test programs: their precompiled header holds its
# folder's paths, so they hit in a clean clone in the same folder only.
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}

stage "setup"
echo "== $(free_mib) MiB free under $PWD (the builds, caches and tests take about 12 GiB)"
./scripts/setup.sh

stage "format"
./scripts/check-format.sh

stage "sanitizer build (clang, with the fuzz targets)"
# A folder configured by another compiler is configured afresh (CMake keeps the first one).
if [ -f build-asan/CMakeCache.txt ] && ! grep -q '^CMAKE_CXX_COMPILER:[A-Z]*=.*clang' build-asan/CMakeCache.txt; then
  rm -rf build-asan
fi
CC=clang CXX=clang++ BUILD_DIR=build-asan BUILD_TYPE=Debug TEST_LABELS="unit;integration;gst;kernels" \
  ./scripts/build.sh -DRDMAVIDEO_WERROR=ON -DRDMAVIDEO_SANITIZE=address,undefined,fuzzer-no-link \
  -DRDMAVIDEO_BUILD_FUZZ=ON -DRDMAVIDEO_WITH_CUDA=OFF -DRDMAVIDEO_BUILD_BENCH=OFF

lines_only=(-DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
            -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG")
stage "optimised build"
TEST_LABELS="kernels;gpu;sdk;windows;timing;rxe" ./scripts/build.sh -DRDMAVIDEO_WERROR=ON \
  "${lines_only[@]}"

# A clean clone's builds have no test timings: CTest is given the ones in the repository, so
# that it starts the longest tests first instead of last.
seed_costs() {  # seed_costs BUILD_DIR
  local dir=$1/Testing/Temporary
  [ -f "$dir/CTestCostData.txt" ] && return 0
  mkdir -p "$dir"
  { grep -v '^#' tests/ctest-costs.txt; echo ---; } >"$dir/CTestCostData.txt"
}

stage "sanitizer tests (-j$parallel) and lint"
# The lint, at a lower priority, in the time the tests spend waiting on their peers; its report
# follows theirs.
nice -n 10 ./scripts/check-lint.sh >build/lint.log 2>&1 &
lint_pid=$!
seed_costs build-asan
# G_SLICE=always-malloc: GLib's slice allocator would hide leaked GStreamer objects from LSan.
tests_status=0
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 G_SLICE=always-malloc \
  LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp \
  ctest --test-dir build-asan -L 'unit|integration|gst|kernels' -j"$parallel" \
  --output-on-failure --timeout 300 || tests_status=$?
lint_status=0
wait "$lint_pid" || lint_status=$?
cat build/lint.log
[ "$tests_status" -eq 0 ] || { echo "sanitizer tests failed" >&2; exit "$tests_status"; }
[ "$lint_status" -eq 0 ] || { echo "lint failed" >&2; exit "$lint_status"; }

stage "optimised kernels, gpu and SDK tests (-j$parallel)"
seed_costs build
ctest --test-dir build -L 'kernels|gpu|sdk' -j"$parallel" --output-on-failure --timeout 300

stage "Windows build and tests (MinGW-w64, under wine)"
./scripts/build-windows.sh -DRDMAVIDEO_WERROR=ON "${lines_only[@]}"
ctest --test-dir build-windows -L windows -j"$parallel" --output-on-failure --timeout 300
# rdmavideo-send.exe under wine into the optimised build's receiver.
ctest --test-dir build -L windows -j"$parallel" --output-on-failure --timeout 300

stage "timing and Soft-RoCE tests (one at a time)"
# What the builds wrote goes to disk first: writeback that stalls a test's process start is
# time the test would measure.
sync
ctest --test-dir build -L 'timing|rxe' --output-on-failure --timeout 300

stage "benchmark smoke run"
python3 bench/run_tcp_bench.py --quick --build-dir build >/dev/null
python3 bench/run_live_bench.py --quick --build-dir build  # the live 4K60 tail, printed
python3 bench/run_gst_bench.py --quick --build-dir build >/dev/null
python3 bench/run_windows_bench.py --quick >/dev/null
python3 bench/run_sdk_bench.py --quick --build-dir build >/dev/null
python3 bench/run_nmos_bench.py --quick --build-dir build >/dev/null

stage "Debian packages and fuzzing (${FUZZ_SECONDS:-30} s a target)"
# The fuzz targets run for a fixed time each, two at a time, beside the packaging, which spends
# most of its time in dpkg and apt; their report follows its.
FUZZ_BUILD_DIR=build-asan ./scripts/fuzz.sh >build/fuzz.log 2>&1 &
fuzz_pid=$!
debian_status=0
{ ./scripts/package-debian.sh build/debs &&
    tests/debian/install_test.sh build/debs build/debian-install-test; } || debian_status=$?
fuzz_status=0
wait "$fuzz_pid" || fuzz_status=$?
cat build/fuzz.log
[ "$debian_status" -eq 0 ] || { echo "Debian packages failed" >&2; exit "$debian_status"; }
[ "$fuzz_status" -eq 0 ] || { echo "fuzzing failed" >&2; exit "$fuzz_status"; }
