#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmasink and rdmasrc over RDMA verbs in the Soft-RoCE lab; runs inside it:
#   tests/rxe/run_in_vm.sh tests/rxe/gst_verbs.sh BUILD_DIR
#
# BUILD_DIR holds gst-plugin/libgstrdmavideo.so, sender/rdmavideo-send and
# receiver/rdmavideo-recv. The receiving end listens on 10.99.0.1 (rxe0), the sending end
# connects from 10.99.0.2 (rxe1); the lab's policy routing makes the traffic cross the veth
# pair. Three pairs, each 120 frames of 640x360 UYVY, no-drop, checksummed:
#
#   1. videotestsrc ! rdmasink  ->  rdmasrc verify=true ! fakesink
#   2. rdmavideo-send --testsrc  ->  rdmasrc verify=true ! fakesink
#   3. videotestsrc ! rdmasink  ->  rdmavideo-recv --verify
#
# From the elements' stats messages at EOS (gst-launch-1.0 -m) and the receiver's stats
# JSON it checks: every frame arrived on both ends, transport verbs, no checksum or pattern
# failures, no copies (rdmasink sends from its registered pool, rdmasrc pushes ring slots).
# Exit status: 0 pass, 1 fail, 77 skipped (GStreamer's tools or base plugins missing).
#
# RXE_GST_FRAMES  frames per pair (default 120)
# RXE_GST_PORT    first of three ports (default 18600)
# RXE_GST_VERBOSE=1  print every process's output
set -euo pipefail

frames=${RXE_GST_FRAMES:-120}
port=${RXE_GST_PORT:-18600}
server=10.99.0.1
client=10.99.0.2
width=640
height=360
frame_bytes=$((width * height * 2))
caps="video/x-raw,format=UYVY,width=$width,height=$height,framerate=60/1"

fail() {
  echo "rxe gst: FAIL: $*" >&2
  exit 1
}
skip() {
  echo "rxe gst: skipped: $*"
  exit 77
}
say() { echo "rxe gst: $*"; }

[ $# -eq 1 ] || fail "usage: tests/rxe/run_in_vm.sh $0 BUILD_DIR"
build=$(cd "$1" && pwd -P) || fail "no build directory $1"
plugin_dir=$build/gst-plugin
send_bin=$build/sender/rdmavideo-send
recv_bin=$build/receiver/rdmavideo-recv
[ -f "$plugin_dir/libgstrdmavideo.so" ] || fail "$plugin_dir/libgstrdmavideo.so not built"
for b in "$send_bin" "$recv_bin"; do [ -x "$b" ] || fail "$b not built"; done
if [ ! -d /sys/class/infiniband/rxe0 ] || [ ! -d /sys/class/infiniband/rxe1 ]; then
  fail "no rxe0/rxe1: run this inside the lab (tests/rxe/run_in_vm.sh $0 BUILD_DIR)"
fi
for t in gst-launch-1.0 gst-inspect-1.0; do
  command -v "$t" >/dev/null || skip "$t not found (install gstreamer1.0-tools)"
done
for t in rdma timeout; do
  command -v "$t" >/dev/null || fail "$t not found (iproute2, coreutils)"
done

work=$(mktemp -d)
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# GStreamer: a private registry in the VM's RAM, the plugin from the build tree. Scanning
# every system plugin under emulation takes long, so the registry sees only what the
# pipelines use: coreelements (fakesink), videotestsrc, and rdmavideo.
# The plugin was built against this userland's GStreamer, so pkg-config knows where it lives.
system_dir=$(pkg-config --variable=pluginsdir gstreamer-1.0) ||
  fail "pkg-config does not know gstreamer-1.0's plugin directory"
mkdir "$work/plugins"
for p in libgstcoreelements.so libgstvideotestsrc.so; do
  [ -f "$system_dir/$p" ] || skip "$p not found in $system_dir (install gstreamer1.0-plugins-base)"
  ln -s "$system_dir/$p" "$work/plugins/$p"
done
ln -s "$plugin_dir/libgstrdmavideo.so" "$work/plugins/libgstrdmavideo.so"
export GST_REGISTRY=$work/registry.bin
export GST_PLUGIN_SYSTEM_PATH=$work/plugins
export GST_PLUGIN_PATH=
for e in rdmasink rdmasrc videotestsrc fakesink; do
  gst-inspect-1.0 "$e" >"$work/inspect-$e.log" 2>&1 ||
    fail "gst-inspect-1.0 $e failed in the lab:"$'\n'"$(cat "$work/inspect-$e.log")"
done
say "GStreamer $(gst-launch-1.0 --version | sed -n 's/^GStreamer //p'):" \
  "rdmasink, rdmasrc loaded from $plugin_dir"

show_logs() {
  local f
  for f in "$@"; do echo "--- ${f##*/}"; cat "$f"; done
}

# stat_of LOG NAME KEY: KEY of the last NAME element message (rdmasink-stats, rdmasrc-stats) that
# gst-launch-1.0 -m printed, e.g. frames=(guint64)120 or transport=(string)verbs.
stat_of() {
  local line
  line=$(grep -F ": $2, " "$1" | tail -n 1) || return 1
  # Strings may be quoted, with spaces and parentheses backslash-escaped: drop the escapes.
  sed -n "s/.*[ ,]$3=([a-z0-9]*)\"\{0,1\}\([^,;\"]*\).*/\1/p" <<<"$line" | tr -d '\134'
}

# json_of FILE KEY: a top-level number or string of a --stats-json file, which the tools write
# one key a line, indented by two (python3 would be the robust way, but it starts slowly in
# the emulated VM).
json_of() {
  sed -n "s/^  \"$2\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}\$/\1/p" "$1"
}

# wait_listen PORT PID LOG: until an rdma_cm id listens on PORT (the receiver is ready).
wait_listen() {
  local i
  for ((i = 0; i < 600; i++)); do
    if rdma resource show cm_id 2>/dev/null | grep -q "state LISTEN .*:$1\b"; then return 0; fi
    kill -0 "$2" 2>/dev/null || fail "the receiver exited before listening:"$'\n'"$(cat "$3")"
    sleep 0.1
  done
  fail "nothing listens on rdma_cm port $1 after 60 s:"$'\n'"$(cat "$3")"
}

# expect WHAT GOT WANT
expect() {
  [ "$2" = "$3" ] || fail "$1 is '$2', expected '$3'"
}

# run_pair NAME RECV_LOG SEND_LOG RECV_CMD... -- SEND_CMD...: the receiver in the background,
# the sender once it listens; both must exit 0.
run_pair() {
  local name=$1 recv_log=$2 send_log=$3 port_=$4
  shift 4
  local recv_cmd=() send_cmd=()
  while [ "$1" != -- ]; do
    recv_cmd+=("$1")
    shift
  done
  shift
  send_cmd=("$@")
  timeout 300 "${recv_cmd[@]}" >"$recv_log" 2>&1 &
  local recv_pid=$!
  pids+=("$recv_pid")
  wait_listen "$port_" "$recv_pid" "$recv_log"
  local send_rc=0 recv_rc=0
  timeout 300 "${send_cmd[@]}" >"$send_log" 2>&1 || send_rc=$?
  wait "$recv_pid" || recv_rc=$?
  if [ "$send_rc" != 0 ] || [ "$recv_rc" != 0 ]; then
    fail "$name: sender exited $send_rc, receiver $recv_rc:"$'\n'"$(show_logs "$send_log" \
      "$recv_log")"
  fi
  if [ "${RXE_GST_VERBOSE:-0}" = 1 ]; then show_logs "$send_log" "$recv_log"; fi
}

# check_src LOG: rdmasrc-stats of a verbs stream of $frames frames, verified, that came from
# rxe1 and arrived on rxe0.
check_src() {
  local log=$1 what="rdmasrc-stats"
  grep -qF ": rdmasrc-stats, " "$log" || fail "no rdmasrc-stats message:"$'\n'"$(cat "$log")"
  expect "$what frames" "$(stat_of "$log" rdmasrc-stats frames)" "$frames"
  expect "$what bytes" "$(stat_of "$log" rdmasrc-stats bytes)" "$((frames * frame_bytes))"
  expect "$what transport" "$(stat_of "$log" rdmasrc-stats transport)" verbs
  expect "$what checksum-failures" "$(stat_of "$log" rdmasrc-stats checksum-failures)" 0
  expect "$what dropped" "$(stat_of "$log" rdmasrc-stats dropped)" 0
  expect "$what copies" "$(stat_of "$log" rdmasrc-stats copies)" 0
  local peer
  peer=$(stat_of "$log" rdmasrc-stats peer)
  [[ $peer == "$client":*"(rxe0)" ]] || fail "$what peer is '$peer', expected $client:PORT (rxe0)"
  grep -q "Got EOS from element" "$log" || fail "the rdmasrc pipeline did not reach EOS"
}

# check_sink LOG: rdmasink-stats of a verbs stream of $frames frames sent from its pool, out
# of rxe1.
check_sink() {
  local log=$1 what="rdmasink-stats"
  grep -qF ": rdmasink-stats, " "$log" || fail "no rdmasink-stats message:"$'\n'"$(cat "$log")"
  expect "$what frames" "$(stat_of "$log" rdmasink-stats frames)" "$frames"
  expect "$what transport" "$(stat_of "$log" rdmasink-stats transport)" verbs
  expect "$what dropped" "$(stat_of "$log" rdmasink-stats dropped)" 0
  expect "$what copies" "$(stat_of "$log" rdmasink-stats copies)" 0
  local peer
  peer=$(stat_of "$log" rdmasink-stats peer)
  [[ $peer == "$server":*"(rxe1)" ]] || fail "$what peer is '$peer', expected $server:PORT (rxe1)"
}

tx_bytes() { cat /sys/class/net/veth1/statistics/tx_bytes; }

# 1. rdmasink -> rdmasrc ---------------------------------------------------------------------
p=$port
tx0=$(tx_bytes)
run_pair "rdmasink -> rdmasrc" "$work/1-src.log" "$work/1-sink.log" "$p" \
  gst-launch-1.0 -m rdmasrc transport=verbs address=$server port="$p" verify=true ! fakesink -- \
  gst-launch-1.0 -m videotestsrc num-buffers="$frames" ! "$caps" ! \
  rdmasink transport=verbs host=$server port="$p" checksum=true sync=false
check_sink "$work/1-sink.log"
check_src "$work/1-src.log"
moved=$((frames * frame_bytes))
tx=$(($(tx_bytes) - tx0))
[ "$tx" -ge "$moved" ] || fail "veth1 sent $tx bytes for $moved bytes of frames: not over rxe1"
say "1. rdmasink -> rdmasrc: $frames frames over verbs, 0 checksum failures, 0 copies; veth1 +$tx B"

# 2. rdmavideo-send -> rdmasrc ---------------------------------------------------------------
p=$((port + 1))
run_pair "rdmavideo-send -> rdmasrc" "$work/2-src.log" "$work/2-send.log" "$p" \
  gst-launch-1.0 -m rdmasrc transport=verbs address=$server port="$p" rdma-device=rxe0 \
  verify=true ! fakesink -- \
  "$send_bin" --connect "$server:$p" --transport verbs --testsrc -s "${width}x$height" \
  --pix-fmt uyvy422 -r 60 --frames "$frames" --no-drop --checksum --quiet \
  --stats-json "$work/2-send.json"
check_src "$work/2-src.log"
expect "rdmavideo-send transport" "$(json_of "$work/2-send.json" transport)" verbs
say "2. rdmavideo-send -> rdmasrc: $frames frames over verbs, checksums and test pattern verified"

# 3. rdmasink -> rdmavideo-recv --------------------------------------------------------------
p=$((port + 2))
run_pair "rdmasink -> rdmavideo-recv" "$work/3-recv.log" "$work/3-sink.log" "$p" \
  "$recv_bin" --listen "$server:$p" --transport verbs --verify --quiet \
  --stats-json "$work/3-recv.json" -- \
  gst-launch-1.0 -m videotestsrc num-buffers="$frames" ! "$caps" ! \
  rdmasink transport=verbs host=$server port="$p" rdma-device=rxe1 checksum=true sync=false
check_sink "$work/3-sink.log"
for kv in "frames $frames" "bytes $((frames * frame_bytes))" "checksum_failures 0" \
  "dropped 0" "transport verbs"; do
  expect "rdmavideo-recv ${kv% *}" "$(json_of "$work/3-recv.json" "${kv% *}")" "${kv#* }"
done
peer=$(json_of "$work/3-recv.json" peer)
[[ $peer == "$client":* ]] || fail "rdmavideo-recv peer is '$peer', expected $client (rxe1)"
say "3. rdmasink -> rdmavideo-recv: $frames frames over verbs, checksums verified, 0 copies"
say "PASS"
