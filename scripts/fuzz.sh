#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer targets alone with clang (AddressSanitizer, UBSan) into build-fuzz/ and
# runs each for FUZZ_SECONDS (default 30), as many at once as there are cores, from the seed
# corpus in tests/fuzz/corpus. New inputs go to a scratch corpus, not into the repository. A
# finding fails the run; its input is left in build-fuzz/findings/ and belongs in
# tests/fuzz/regressions/ (fuzz_corpus_test replays it) with the fix. The message path the verbs transport adds (decode_sealed) is the same code, so the
# targets are built without rdma-core.
#
# FUZZ_BUILD_DIR=DIR uses a build folder configured already with clang, RDMAVIDEO_BUILD_FUZZ=ON
# and RDMAVIDEO_SANITIZE=...,fuzzer-no-link (CI's sanitizer build is one), building only the
# targets there, instead of a build of their own.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-30}
targets=(decode receiver sound tiles stream)
entry_points=("${targets[@]/#/fuzz_}")
if [ -n "${FUZZ_BUILD_DIR:-}" ]; then
  build_dir=$FUZZ_BUILD_DIR
  grep -q '^RDMAVIDEO_BUILD_FUZZ:BOOL=ON' "$build_dir/CMakeCache.txt" 2>/dev/null ||
    { echo "fuzz: $build_dir is not a build configured with RDMAVIDEO_BUILD_FUZZ=ON" >&2; exit 2; }
  cmake --build "$build_dir" -j"$(nproc)" --target "${entry_points[@]}"
else
  build_dir=build-fuzz
  CC=clang CXX=clang++ BUILD_DIR=$build_dir BUILD_TARGETS="${entry_points[*]}" \
    ./scripts/build.sh -DRDMAVIDEO_BUILD_FUZZ=ON -DRDMAVIDEO_WERROR=ON \
    -DRDMAVIDEO_SANITIZE=address,undefined,fuzzer-no-link \
    -DRDMAVIDEO_BUILD_TESTS=OFF -DRDMAVIDEO_BUILD_BENCH=OFF -DRDMAVIDEO_WITH_VERBS=OFF \
    -DRDMAVIDEO_WITH_FFMPEG=ON -DRDMAVIDEO_WITH_GSTREAMER=OFF -DRDMAVIDEO_WITH_SDL2=OFF \
    -DRDMAVIDEO_WITH_CUDA=OFF
fi
mkdir -p "$build_dir/findings"
# Each target in its own process, as many at once as there are cores.
run_target() {
  local target=$1 scratch="$build_dir/corpus-$1"
  mkdir -p "$scratch"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$build_dir/tests/fuzz/fuzz_$target" -max_total_time="$seconds" -max_len=65536 -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$build_dir/findings/$target-" \
    "$scratch" "tests/fuzz/corpus/$target" 2>"$build_dir/fuzz_$target.log"
}
declare -A pids
status=0
report() {  # report TARGET PID: waits for it and says how it went
  if wait "$2"; then
    echo "== fuzz_$1 for ${seconds} s:" \
      "$(grep -E "^stat::number_of_executed_units" "$build_dir/fuzz_$1.log" | tail -1)"
  else
    tail -40 "$build_dir/fuzz_$1.log"
    echo "fuzz_$1: a finding; its input is in $build_dir/findings/" >&2
    status=1
  fi
}
running=()
for target in "${targets[@]}"; do
  if [ "${#running[@]}" -ge "$(nproc)" ]; then
    report "${running[0]}" "${pids[${running[0]}]}"
    running=("${running[@]:1}")
  fi
  run_target "$target" &
  pids[$target]=$!
  running+=("$target")
done
for target in "${running[@]}"; do report "$target" "${pids[$target]}"; done
exit $status
