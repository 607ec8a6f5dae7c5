#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Smoke test of the Soft-RoCE lab; runs inside it:  tests/rxe/run_in_vm.sh tests/rxe/smoke.sh
#
# Checks that rxe0 and rxe1 are ACTIVE (rdma link) and listed by ibv_devices, then runs
# ib_write_bw over rdma_cm between 10.99.0.1 (server, rxe0) and 10.99.0.2 (client, rxe1) and
# checks that the bytes really crossed the veth pair (veth1 sent and veth0 received at least
# what ib_write_bw moved; lo carried next to nothing). Prints the ib_write_bw result line.
#
# RXE_SMOKE_SIZE   message size in bytes (default 4194304)
# RXE_SMOKE_ITERS  iterations (default 50; at 4 MiB that is 200 MiB, a few seconds under TCG)
set -euo pipefail

size=${RXE_SMOKE_SIZE:-4194304}
iters=${RXE_SMOKE_ITERS:-50}
port=${RXE_SMOKE_PORT:-18515}

fail() {
  echo "rxe smoke: FAIL: $*" >&2
  exit 1
}
say() { echo "rxe smoke: $*"; }

if [ ! -d /sys/class/net/veth0 ] || [ ! -d /sys/class/net/veth1 ]; then
  fail "no veth0/veth1: run this inside the lab (tests/rxe/run_in_vm.sh $0)"
fi
for t in rdma ibv_devices ib_write_bw timeout; do
  command -v "$t" >/dev/null || fail "$t not found (rdma-core, ibverbs-utils, perftest, iproute2)"
done

# 1. Both rxe links ACTIVE.
links=$(rdma link show) || fail "rdma link show failed"
for d in rxe0 rxe1; do
  grep -Eq "^link $d/1 state ACTIVE .*netdev veth${d#rxe}( |$)" <<<"$links" ||
    fail "$d is not ACTIVE on veth${d#rxe}; rdma link shows:"$'\n'"$links"
done
say "rdma link: rxe0 (veth0) and rxe1 (veth1) ACTIVE"

# 2. libibverbs sees both devices (rxe provider).
devs=$(ibv_devices) || fail "ibv_devices failed"
for d in rxe0 rxe1; do
  grep -Eq "^[[:space:]]+${d}[[:space:]]" <<<"$devs" || fail "ibv_devices does not list $d:"$'\n'"$devs"
done
say "ibv_devices: rxe0 and rxe1 listed"

# 3. ib_write_bw rxe1 (10.99.0.2) -> rxe0 (10.99.0.1) over rdma_cm, across the veth pair.
stat_of() { cat "/sys/class/net/$1/statistics/$2"; }
tx1_0=$(stat_of veth1 tx_bytes)
rx0_0=$(stat_of veth0 rx_bytes)
lo_0=$(stat_of lo tx_bytes)

work=$(mktemp -d)
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

timeout 300 ib_write_bw -R -F -d rxe0 -p "$port" -s "$size" -n "$iters" >"$work/server.log" 2>&1 &
server_pid=$!
# The server is ready once its rdma_cm id listens on the port.
for ((i = 0; i < 300; i++)); do
  if rdma resource show cm_id 2>/dev/null | grep -q "state LISTEN .*:$port\b"; then break; fi
  kill -0 "$server_pid" 2>/dev/null || fail "ib_write_bw server exited early:"$'\n'"$(cat "$work/server.log")"
  sleep 0.1
done

if ! timeout 300 ib_write_bw -R -F -d rxe1 -p "$port" -s "$size" -n "$iters" 10.99.0.1 \
  >"$work/client.log" 2>&1; then
  fail "ib_write_bw client failed:"$'\n'"$(cat "$work/client.log")"$'\n'"server:"$'\n'"$(cat "$work/server.log")"
fi
server_rc=0
wait "$server_pid" || server_rc=$?
server_pid=
[ "$server_rc" = 0 ] || fail "ib_write_bw server exited $server_rc:"$'\n'"$(cat "$work/server.log")"

# Result line: "#bytes #iterations BW peak BW average MsgRate".
line=$(awk -v s="$size" '$1 == s && NF >= 4 { print; exit }' "$work/client.log")
[ -n "$line" ] || fail "no bandwidth line in the client output:"$'\n'"$(cat "$work/client.log")"

# Both ends on the intended devices and addresses (perftest prints the GIDs, IPv4-mapped).
grep -q 'Device *: rxe1' "$work/client.log" || fail "the client did not run on rxe1"
grep -q 'Device *: rxe0' "$work/server.log" || fail "the server did not run on rxe0"
gids=$(grep -A1 'local address' "$work/client.log" | grep -o 'GID: .*' || true)
[[ $gids == *:10:99:00:02 ]] || fail "client GID is not 10.99.0.2: $gids"
gids=$(grep -A1 'remote address' "$work/client.log" | grep -o 'GID: .*' || true)
[[ $gids == *:10:99:00:01 ]] || fail "server GID is not 10.99.0.1: $gids"

moved=$((size * iters))
tx1=$(($(stat_of veth1 tx_bytes) - tx1_0))
rx0=$(($(stat_of veth0 rx_bytes) - rx0_0))
lo=$(($(stat_of lo tx_bytes) - lo_0))
[ "$tx1" -ge "$moved" ] || fail "veth1 sent $tx1 bytes, less than the $moved ib_write_bw moved: not over the pair"
[ "$rx0" -ge "$moved" ] || fail "veth0 received $rx0 bytes, less than the $moved ib_write_bw moved"
[ "$lo" -lt $((moved / 10)) ] || fail "lo carried $lo bytes: the traffic took the loopback path"
say "veth1 tx +$tx1 B, veth0 rx +$rx0 B, lo +$lo B for $moved B written"

echo " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]"
echo "$line"
if [ "${RXE_SMOKE_VERBOSE:-0}" = 1 ]; then cat "$work/client.log" "$work/server.log"; fi
say "PASS"
