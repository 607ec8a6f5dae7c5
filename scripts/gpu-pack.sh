#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Run on the build machine: packs what the GPU check needs on a GPU machine that has no
# build of its own and lacks FFmpeg, SDL2 or GStreamer, into OUT.tar.xz split in parts of at
# most 29 MiB (OUT.tar.xz.part-aa, -ab, ...) for transfers with a size limit (two parts and
# the source tree fit in 64 MiB):
#   OUT/lib    the shared libraries its programs load, apart from glibc's and the C++
#              runtime (a GPU machine has newer ones);
#   OUT/build  the build's programs and gpu-labelled tests, stripped, with the CTest files and
#              CMakeCache.txt, laid out as in BUILD_DIR (the whole build is too large to move).
# scripts/gpu-check.sh joins and unpacks the parts, and runs from OUT/build when there is no
# build beside it.
#   scripts/gpu-pack.sh [BUILD_DIR] [OUT]     (defaults: build, .gpu-libs)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-.gpu-libs}
programs=(sender/rdmavideo-send receiver/rdmavideo-recv doctor/rdmavideo-doctor bench/rdmavideo-gpu-staging
          tests/unit/cuda_gpu_test tests/integration/gpu_memory_gpu_test tests/integration/composite_gpu_gpu_test)
# Built only with FFmpeg: carried where the build has it.
[ -x "$build/bench/rdmavideo-prores-encoders" ] && programs+=(bench/rdmavideo-prores-encoders)
rm -rf "$out" && mkdir -p "$out/lib" "$out/build"
for p in "${programs[@]}"; do
  [ -x "$build/$p" ] || { echo "gpu-pack: $build/$p is not built (cmake --build $build)" >&2; exit 1; }
  mkdir -p "$out/build/$(dirname "$p")"
  strip -o "$out/build/$p" "$build/$p"
  ldd "$build/$p" | awk '/=> \//{print $3}'
done | sort -u | grep -Ev '/(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
  while read -r lib; do cp -L "$lib" "$out/lib/"; done
# CTest's files (every folder's CTestTestfile.cmake and the tests' lists) and the cache.
(cd "$build" && find . -name 'CTestTestfile.cmake' -o -name '*_include.cmake' -o -name '*_tests.cmake') |
  while read -r f; do mkdir -p "$out/build/$(dirname "$f")" && cp "$build/$f" "$out/build/$f"; done
cp "$build/CMakeCache.txt" "$out/build/"
rm -f "$out".tar.xz.part-*
tar -C "$(dirname "$out")" -cf - "$(basename "$out")" | xz -9 -T0 | split -b 29M - "$out.tar.xz.part-"
echo "gpu-pack: $(find "$out/lib" -type f | wc -l) libraries and ${#programs[@]} programs," \
  "$(du -ch "$out".tar.xz.part-* | tail -1 | cut -f1) in $(ls "$out".tar.xz.part-* | wc -l) parts: $out.tar.xz.part-*"
