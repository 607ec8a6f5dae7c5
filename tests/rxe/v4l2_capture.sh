#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Real V4L2 capture through rdmavideo-send, in the lab VM (which can load kernel modules):
#   tests/rxe/run_in_vm.sh tests/rxe/v4l2_capture.sh BUILD_DIR
#
# BUILD_DIR holds sender/rdmavideo-send and receiver/rdmavideo-recv. Loads vivid (the
# kernel's virtual video test driver) with one capture node, then
#
#   rdmavideo-recv --listen 127.0.0.1:0 --output out.raw
#   rdmavideo-send -f v4l2 -i /dev/videoN -r 25 --frames 30      (over TCP)
#
# and checks: both exit 0; 30 frames arrived, none dropped; the format is what FFmpeg's v4l2
# input opens vivid with by default (640x360 yuv420p, at the 25 fps asked of the device);
# the stream is live (a capture input is real time); out.raw is 30 frames of that size; and
# the first and last frames are vivid's default test pattern, 75% colour bars (BT.601
# limited range), sampled in the middle of each of the eight bars on two rows below vivid's
# text overlay. Then `-s 640x480 --pix-fmt yuyv422`: the device itself is asked for that
# size and format (as ffmpeg's -video_size/-pixel_format do), so nothing is converted.
# Exit status: 0 pass, 1 fail, 77 skipped (vivid cannot be loaded, no ffmpeg v4l2 input).
#
# RXE_V4L2_VERBOSE=1  print both tools' output
set -euo pipefail

frames=30
rate=25
width=640
height=360
pix_fmt=yuv420p
frame_bytes=$((width * height * 3 / 2))

fail() {
  echo "rxe v4l2: FAIL: $*" >&2
  exit 1
}
skip() {
  echo "rxe v4l2: skipped: $*"
  exit 77
}
say() { echo "rxe v4l2: $*"; }

[ $# -eq 1 ] || fail "usage: tests/rxe/run_in_vm.sh $0 BUILD_DIR"
build=$(cd "$1" && pwd -P) || fail "no build directory $1"
send_bin=$build/sender/rdmavideo-send
recv_bin=$build/receiver/rdmavideo-recv
for b in "$send_bin" "$recv_bin"; do [ -x "$b" ] || fail "$b not built"; done
[ "${RXE_LAB:-0}" = 1 ] || fail "run this inside the lab (tests/rxe/run_in_vm.sh $0 BUILD_DIR)"
for t in timeout od; do
  command -v "$t" >/dev/null || fail "$t not found (coreutils)"
done

# --- vivid -----------------------------------------------------------------------------------
# One instance with only a video capture node (node_types bit 0). modprobe where kmod is
# installed, else insmod the modules.dep chain, dependencies first.
kver=$(uname -r)
moddir=/lib/modules/$kver
vivid_args=(n_devs=1 node_types=0x1)
if [ ! -d /sys/module/vivid ]; then
  if command -v modprobe >/dev/null; then
    modprobe vivid "${vivid_args[@]}" 2>"${TMPDIR:-/tmp}/modprobe.log" ||
      skip "modprobe vivid failed on $kver: $(cat "${TMPDIR:-/tmp}/modprobe.log")"
  else
    dep=$(grep -E '(^|/)vivid\.ko[^:]*:' "$moddir/modules.dep" 2>/dev/null) ||
      skip "no vivid module for $kver in $moddir/modules.dep"
    read -r -a chain <<<"${dep#*:}"
    for ((i = ${#chain[@]} - 1; i >= 0; i--)); do
      m=${chain[i]}
      name=$(basename "$m")
      name=${name%%.ko*}
      [ -d "/sys/module/${name//-/_}" ] || insmod "$moddir/$m" || skip "insmod $m failed"
    done
    insmod "$moddir/${dep%%:*}" "${vivid_args[@]}" || skip "insmod vivid failed"
  fi
fi
node=
for d in /sys/class/video4linux/video*; do
  [ -f "$d/name" ] || continue
  if [[ $(cat "$d/name") == vivid-*-vid-cap ]]; then
    node=/dev/${d##*/}
    if [ ! -c "$node" ]; then # devtmpfs normally has it; no udev here
      IFS=: read -r major minor <"$d/dev"
      mknod "$node" c "$major" "$minor" || fail "mknod $node c $major $minor failed"
    fi
    break
  fi
done
[ -n "$node" ] || skip "vivid loaded but no vivid-*-vid-cap node in /sys/class/video4linux"
say "vivid capture node $node ($(cat "/sys/class/video4linux/${node##*/}/name"))"

work=$(mktemp -d)
recv_pid=
cleanup() {
  if [ -n "$recv_pid" ]; then kill "$recv_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

show_logs() {
  local f
  for f in "$@"; do echo "--- ${f##*/}"; cat "$f"; done
}

# json_of FILE KEY: a top-level number or string of a --stats-json file (one key a line,
# indented by two).
json_of() {
  sed -n "s/^  \"$2\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}\$/\1/p" "$1"
}

# expect WHAT GOT WANT
expect() {
  [ "$2" = "$3" ] || fail "$1 is '$2', expected '$3'"
}

# start_receiver LOG ARG...: rdmavideo-recv on a free loopback port, logging to LOG; sets
# recv_pid and port once it listens.
start_receiver() {
  local log=$1 i
  shift
  timeout 120 "$recv_bin" --listen 127.0.0.1:0 --transport tcp --ring 32 --quiet "$@" \
    >"$log" 2>&1 &
  recv_pid=$!
  port=
  for ((i = 0; i < 600; i++)); do
    port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$log" | head -n 1)
    [ -n "$port" ] && return
    kill -0 "$recv_pid" 2>/dev/null || fail "the receiver exited before listening:"$'\n'"$(cat "$log")"
    sleep 0.1
  done
  fail "the receiver did not listen after 60 s:"$'\n'"$(cat "$log")"
}

# --- receiver, then sender -------------------------------------------------------------------
start_receiver "$work/recv.log" --stats-json "$work/recv.json" --output "$work/out.raw"

send_rc=0 recv_rc=0
timeout 120 "$send_bin" --connect "127.0.0.1:$port" --transport tcp -f v4l2 -i "$node" \
  -r "$rate" --frames "$frames" --quiet --stats-json "$work/send.json" \
  >"$work/send.log" 2>&1 || send_rc=$?
wait "$recv_pid" || recv_rc=$?
recv_pid=
if [ "$send_rc" != 0 ] || [ "$recv_rc" != 0 ]; then
  if [ "$send_rc" != 0 ] && grep -q "is not an input format or device" "$work/send.log"; then
    skip "this FFmpeg has no v4l2 input: $(cat "$work/send.log")"
  fi
  fail "sender exited $send_rc, receiver $recv_rc:"$'\n'"$(show_logs "$work/send.log" "$work/recv.log")"
fi
if [ "${RXE_V4L2_VERBOSE:-0}" = 1 ]; then show_logs "$work/send.log" "$work/recv.log"; fi

# --- what arrived ----------------------------------------------------------------------------
for side in send recv; do
  for kv in "frames $frames" "dropped 0" "transport tcp" "width $width" "height $height" \
    "pix_fmt $pix_fmt" "frame_rate $rate"; do
    expect "rdmavideo-$side ${kv% *}" "$(json_of "$work/$side.json" "${kv% *}")" "${kv#* }"
  done
done
expect "rdmavideo-recv bytes" "$(json_of "$work/recv.json" bytes)" "$((frames * frame_bytes))"
grep -q "input: .* from $node (video4linux2" "$work/send.log" ||
  fail "the sender did not say it reads $node through v4l2:"$'\n'"$(cat "$work/send.log")"
grep -q "real time, dropping when the receiver is behind" "$work/send.log" ||
  fail "the sender did not send live:"$'\n'"$(cat "$work/send.log")"
grep -q "stream [0-9]* ring [0-9]*: ${width}x$height $pix_fmt at $rate fps, .*, live\$" "$work/recv.log" ||
  fail "the receiver did not see a live ${width}x$height $pix_fmt stream:"$'\n'"$(cat "$work/recv.log")"
size=$(stat -c %s "$work/out.raw")
expect "out.raw size" "$size" "$((frames * frame_bytes))"

# 75% colour bars, BT.601 limited range, as Y Cb Cr: white, yellow, cyan, green, magenta,
# red, blue, black; each bar width/8 wide. vivid's text overlay covers the top ~150 lines.
bars=("180 128 128" "162 44 142" "131 156 44" "112 72 58" "84 184 198" "65 100 212"
  "35 212 114" "16 128 128")
tolerance=6
# check_row FRAME ROW: the middle of each bar on that row of that frame of out.raw.
check_row() {
  local f=$1 y=$2 base=$(($1 * frame_bytes)) cw=$((width / 2)) cy=$(($2 / 2)) i
  local -a Y U V want
  read -r -a Y <<<"$(od -An -v -tu1 -w100000 -j $((base + y * width)) -N "$width" "$work/out.raw")"
  read -r -a U <<<"$(od -An -v -tu1 -w100000 -j $((base + width * height + cy * cw)) -N "$cw" "$work/out.raw")"
  read -r -a V <<<"$(od -An -v -tu1 -w100000 -j $((base + width * height * 5 / 4 + cy * cw)) \
    -N "$cw" "$work/out.raw")"
  for ((i = 0; i < 8; i++)); do
    local x=$((i * width / 8 + width / 16))
    read -r -a want <<<"${bars[i]}"
    local got=("${Y[x]}" "${U[x / 2]}" "${V[x / 2]}") c
    for c in 0 1 2; do
      local d=$((got[c] - want[c]))
      if ((d < -tolerance || d > tolerance)); then
        fail "frame $f row $y bar $i (x $x): Y Cb Cr ${got[*]}, expected ${want[*]} +-$tolerance"
      fi
    done
  done
}
for f in 0 $((frames - 1)); do
  for y in $((height * 5 / 8)) $((height - 8)); do check_row "$f" "$y"; done
done

say "$frames frames ${width}x$height $pix_fmt at $rate fps captured from $node, sent live over" \
  "TCP, 0 dropped; vivid's 75% colour bars in the first and last frames"

# --- -s and --pix-fmt ask the device itself, so nothing is converted ----------------------------
start_receiver "$work/recv2.log" --stats-json "$work/recv2.json"
send_rc=0 recv_rc=0
timeout 120 "$send_bin" --connect "127.0.0.1:$port" --transport tcp -f v4l2 -i "$node" \
  -s 640x480 --pix-fmt yuyv422 -r "$rate" --frames 10 --quiet \
  >"$work/send2.log" 2>&1 || send_rc=$?
wait "$recv_pid" || recv_rc=$?
recv_pid=
if [ "$send_rc" != 0 ] || [ "$recv_rc" != 0 ]; then
  fail "native: sender exited $send_rc, receiver $recv_rc:"$'\n'"$(show_logs "$work/send2.log" "$work/recv2.log")"
fi
for kv in "frames 10" "width 640" "height 480" "pix_fmt yuyv422"; do
  expect "native rdmavideo-recv ${kv% *}" "$(json_of "$work/recv2.json" "${kv% *}")" "${kv#* }"
done
grep -q "input: rawvideo 640x480 yuyv422 from $node" "$work/send2.log" ||
  fail "the device was not opened as 640x480 yuyv422:"$'\n'"$(cat "$work/send2.log")"
if grep -q "converting" "$work/send2.log"; then
  fail "a native capture was converted:"$'\n'"$(cat "$work/send2.log")"
fi
say "-s 640x480 --pix-fmt yuyv422 opened the device in that format: 10 frames, no conversion"
say "PASS"
