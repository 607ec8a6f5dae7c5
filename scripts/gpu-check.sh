#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Run on a machine with a GPU, in a copy of the source tree holding a build made elsewhere
# (BUILD_DIR), or the parts of the archive scripts/gpu-pack.sh made (in this tree, or in
# GPU_LIBS_PARTS, a folder they were moved to one by one): the libraries that machine lacks
# and the build's programs and gpu tests. Runs every test labelled gpu, the GPU bench, the
# composite bench with its canvas in host and in GPU memory, the ProRes encoders' bench, and
# writes what it found (GPU, driver, each test, the bench table) to RESULTS (default
# gpu-results/), for docs/gpu.md.
#   scripts/gpu-check.sh [BUILD_DIR] [RESULTS]
set -euo pipefail
cd "$(dirname "$0")/.."
results=${2:-gpu-results}
mkdir -p "$results"
parts=()
for part in $(ls .gpu-libs.tar.xz.part-* "${GPU_LIBS_PARTS:-.}"/.gpu-libs.tar.xz.part-* 2>/dev/null |
              xargs -rn1 basename | sort -u); do
  if [ -f "$part" ]; then parts+=("$part"); else parts+=("$GPU_LIBS_PARTS/$part"); fi
done
if [ ${#parts[@]} -gt 0 ] && [ ! -d .gpu-libs ]; then cat "${parts[@]}" | tar -xJf -; fi
[ -d .gpu-libs/lib ] && export LD_LIBRARY_PATH=$PWD/.gpu-libs/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
build=${1:-build}
[ ! -f "$build/CMakeCache.txt" ] && [ -z "${1:-}" ] && [ -f .gpu-libs/build/CMakeCache.txt ] && build=.gpu-libs/build
build=$(realpath "$build")
# The tests name the programs by the paths the build was configured with: where this copy
# lives elsewhere, those paths are made to lead here.
configured=$(sed -n 's/^rdmavideo_BINARY_DIR:STATIC=//p' "$build/CMakeCache.txt")
if [ "$configured" != "$build" ] && [ ! -e "$configured" ]; then
  mkdir -p "$(dirname "$configured")" && ln -s "$build" "$configured"
fi
{
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  nvidia-smi --query-gpu=name,driver_version,pci.bus_id,memory.total --format=csv,noheader || true
  "$build/doctor/rdmavideo-doctor" | sed -n '/^GPU memory/,/^$/p' || true
} | tee "$results/machine.txt"
status=0
ctest --test-dir "$configured" -L gpu --output-on-failure -V 2>&1 | tee "$results/ctest.txt" |
  grep -E '^\s*[0-9]+/[0-9]+ Test|tests passed|Skipped|Failed' || true
grep -q '100% tests passed' "$results/ctest.txt" || status=1
python3 bench/run_gpu_bench.py --build-dir "$configured" --json "$results/gpu-bench.json" |
  tee "$results/gpu-bench.txt" || status=1
# The composite's canvas in host memory against the one in GPU memory (no GStreamer there).
python3 bench/run_composite_bench.py --build-dir "$configured" --memory both --peer none --seconds 8 |
  tee "$results/composite-bench.txt" || status=1
# The ProRes encoder on the GPU against its CPU twin and FFmpeg's prores_aw and prores_ks.
if [ -x "$configured/bench/rdmavideo-prores-encoders" ]; then
  "$configured/bench/rdmavideo-prores-encoders" --frames 60 | tee "$results/prores-bench.txt" ||
    echo "rdmavideo-prores-encoders did not run (its FFmpeg libraries?)" | tee -a "$results/prores-bench.txt"
fi
exit $status
