#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Speed baseline of the Soft-RoCE lab; runs inside it:  tests/rxe/run_in_vm.sh tests/rxe/baseline.sh
#
# Measures, from 10.99.0.2 to 10.99.0.1 across the veth pair:
#   - RDMA: ib_write_bw over rdma_cm, rxe1 -> rxe0, 4 MiB messages (RXE_BW_SIZE, RXE_BW_ITERS)
#   - TCP: one stream of RXE_TCP_MB MiB (default 1024) through a plain socket
# and prints both in MB/s (10^6 bytes/s). Speeds in the lab mean little on their own (the CPU
# may be emulated); compare a transport against these numbers from the same VM run.
# With RXE_OUT set (run_in_vm.sh sets it), also writes $RXE_OUT/baseline.json.
set -euo pipefail

size=${RXE_BW_SIZE:-4194304}
iters=${RXE_BW_ITERS:-200}
tcp_mb=${RXE_TCP_MB:-1024}

fail() {
  echo "rxe baseline: FAIL: $*" >&2
  exit 1
}
[ -d /sys/class/net/veth0 ] || fail "no veth0: run this inside the lab (tests/rxe/run_in_vm.sh $0)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# --- RDMA WRITE, rxe1 -> rxe0 -------------------------------------------------------------
ib_write_bw -R -F -d rxe0 -s "$size" -n "$iters" >"$work/server.log" 2>&1 &
server=$!
for ((i = 0; i < 300; i++)); do
  rdma resource show cm_id 2>/dev/null | grep -q 'state LISTEN .*:18515\b' && break
  sleep 0.1
done
ib_write_bw -R -F -d rxe1 -s "$size" -n "$iters" 10.99.0.1 >"$work/client.log" 2>&1 ||
  fail "ib_write_bw failed: $(cat "$work/client.log")"
wait "$server" || fail "ib_write_bw server failed: $(cat "$work/server.log")"
line=$(awk -v s="$size" '$1 == s && NF >= 4 { print; exit }' "$work/client.log")
[ -n "$line" ] || fail "no result line: $(cat "$work/client.log")"
# perftest's "MB/sec" is MiB/s; report both.
rdma_mib=$(awk '{ print $4 }' <<<"$line")
rdma_mb=$(awk -v m="$rdma_mib" 'BEGIN { printf "%.1f", m * 1.048576 }')
echo "ib_write_bw -R rxe1->rxe0, $size B x $iters: $rdma_mib MiB/s ($rdma_mb MB/s)"
echo "  $line"

# --- TCP, 10.99.0.2 -> 10.99.0.1 ----------------------------------------------------------
tx0=$(cat /sys/class/net/veth1/statistics/tx_bytes)
tcp_mb_s=$(python3 - "$tcp_mb" <<'PY'
import socket, sys, threading, time
total = int(sys.argv[1]) << 20
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("10.99.0.1", 5201))
srv.listen(1)
result = {}
def serve():
    conn, _ = srv.accept()
    buf = bytearray(1 << 20)
    got = conn.recv_into(buf)
    t0 = time.monotonic()
    while True:
        n = conn.recv_into(buf)
        if not n:
            break
        got += n
    result["rate"] = got / (time.monotonic() - t0) / 1e6
    result["bytes"] = got
t = threading.Thread(target=serve)
t.start()
cli = socket.socket()
cli.bind(("10.99.0.2", 0))
cli.connect(("10.99.0.1", 5201))
chunk = memoryview(bytes(1 << 20))
for _ in range(total >> 20):
    cli.sendall(chunk)
cli.close()
t.join()
assert result["bytes"] == total, result
print(f"{result['rate']:.1f}")
PY
) || fail "TCP test failed"
tx=$(($(cat /sys/class/net/veth1/statistics/tx_bytes) - tx0))
[ "$tx" -ge $((tcp_mb << 20)) ] || fail "TCP did not cross the veth pair (veth1 sent $tx bytes)"
echo "TCP 10.99.0.2->10.99.0.1, $tcp_mb MiB, one stream: $tcp_mb_s MB/s"
awk -v r="$rdma_mb" -v t="$tcp_mb_s" 'BEGIN { printf "TCP / RDMA: %.1fx\n", t / r }'

if [ -n "${RXE_OUT:-}" ] && [ -d "$RXE_OUT" ]; then
  printf '{"rdma_write_mb_s": %s, "rdma_msg_bytes": %s, "tcp_mb_s": %s}\n' \
    "$rdma_mb" "$size" "$tcp_mb_s" >"$RXE_OUT/baseline.json"
fi
