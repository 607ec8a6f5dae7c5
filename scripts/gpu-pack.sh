#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Run on the build machine: packs the shared libraries the GPU check's programs load, apart
# from glibc's and the C++ runtime (a GPU machine has newer ones), into OUT.tar.xz, for a
# GPU machine that lacks FFmpeg, SDL2 or GStreamer, split in parts of at most 60 MiB
# (OUT.tar.xz.part-aa, -ab, ...) for transfers with a size limit. scripts/gpu-check.sh
# joins and unpacks them.
#   scripts/gpu-pack.sh [BUILD_DIR] [OUT]     (defaults: build, .gpu-libs)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-.gpu-libs}
programs=("$build/sender/rdmavideo-send" "$build/receiver/rdmavideo-recv" "$build/doctor/rdmavideo-doctor"
          "$build/bench/rdmavideo-gpu-staging" "$build/tests/unit/cuda_gpu_test"
          "$build/tests/integration/gpu_memory_gpu_test")
rm -rf "$out" && mkdir -p "$out"
for p in "${programs[@]}"; do
  [ -x "$p" ] || { echo "gpu-pack: $p is not built (cmake --build $build)" >&2; exit 1; }
  ldd "$p" | awk '/=> \//{print $3}'
done | sort -u | grep -Ev '/(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
  while read -r lib; do cp -L "$lib" "$out/"; done
rm -f "$out".tar.xz.part-*
tar -C "$(dirname "$out")" -cf - "$(basename "$out")" | xz -9 -T0 | split -b 60M - "$out.tar.xz.part-"
echo "gpu-pack: $(find "$out" -type f | wc -l) libraries, $(du -ch "$out".tar.xz.part-* | tail -1 | cut -f1)" \
  "in $(ls "$out".tar.xz.part-* | wc -l) parts: $out.tar.xz.part-*"
