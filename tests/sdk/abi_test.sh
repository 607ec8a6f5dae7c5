#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The C API's ABI against its baseline (sdk/abi/librdmavideo.so.0.abi) with libabigail's
# abidiff: an incompatible change (a function removed, a struct or signature changed) fails,
# unless the library has a new SONAME; an addition passes, and is reported. Before that, the
# check is shown to catch a change: the library against a baseline with one more function.
# abi_test.sh LIBRARY BASELINE HEADERS_DIR WORK_DIR
set -euo pipefail
library=$1 baseline=$2 headers=$3 work=$4
command -v abidiff >/dev/null || { echo "abi_test: abidiff not found (apt install abigail-tools)" >&2; exit 1; }
mkdir -p "$work"
compare() {  # compare BASELINE [LIBRARY]: abidiff's exit status
  local rc=0
  if [ $# -gt 1 ]; then
    abidiff --no-show-locs "$1" "$2" >"$work/report.txt" 2>&1 || rc=$?
  else
    abidiff --headers-dir2 "$headers" --drop-private-types --no-show-locs "$1" "$library" \
      >"$work/report.txt" 2>&1 || rc=$?
  fi
  return $rc
}

# The check itself: an ABI that lacks a function the baseline has is an incompatible change
# (abidiff's bit 3, 8). Two ABI descriptions, no debug information to read: quick.
sed 's/rdmavideo_sender_end_audio/rdmavideo_sender_end_audio_gone/g' "$baseline" >"$work/altered.abi"
rc=0
compare "$baseline" "$work/altered.abi" || rc=$?
if (( (rc & 8) == 0 )); then
  echo "abi_test: abidiff did not call a removed function incompatible (status $rc):" >&2
  cat "$work/report.txt" >&2
  exit 1
fi

rc=0
compare "$baseline" || rc=$?
cat "$work/report.txt"
if (( rc & 3 )); then
  echo "abi_test: abidiff failed (status $rc)" >&2
  exit 1
fi
if (( rc & 8 )); then
  base_soname=$(sed -nE "s/.*soname='([^']*)'.*/\\1/p" "$baseline" | head -1)
  soname=$(readelf -d "$library" | sed -nE 's/.*Library soname: \[(.*)\]/\1/p')
  if [ "$base_soname" = "$soname" ]; then
    echo "abi_test: an incompatible change to the C API under the same SONAME ($soname)." >&2
    echo "Keep the ABI, or give the library a new SONAME and renew the baseline" \
         "(scripts/abi-baseline.sh)." >&2
    exit 1
  fi
  echo "abi_test: incompatible with the baseline, under a new SONAME ($base_soname -> $soname)"
elif (( rc & 4 )); then
  echo "abi_test: compatible additions to the C API (renew the baseline at the release)"
else
  echo "abi_test: the C API's ABI is the baseline's"
fi
