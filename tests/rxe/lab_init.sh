#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Stage 2 of the Soft-RoCE lab VM, PID 1 after switch_root into the host's userland (the
# host root over 9p + tmpfs overlay). Builds the lab network, runs the command that
# run_in_vm.sh left in the control directory CTL, writes its exit status to CTL/rc and
# powers the VM off. Never run this on a host: it rewrites the routing policy.
#
#   veth0 10.99.0.1/24 <-> veth1 10.99.0.2/24, MTU 9000; rxe0 on veth0, rxe1 on veth1.
#   Both addresses are local, so by default traffic between them takes lo (and rdma_cm
#   binds both ends to rxe0). Locally generated traffic is policy-routed across the pair
#   instead: to 10.99.0.1 via veth1 (src .2), to 10.99.0.2 via veth0 (src .1), with the
#   local table moved below those rules and accept_local=1 / rp_filter=0 everywhere.
#
# Every exec costs 0.05-0.5 s here (binaries and libraries come over 9p, the CPU is
# emulated, the first run of any code is translated), so the setup uses bash builtins and
# batches: one `ip -batch` per step, two `rdma`.
set -Eeuo pipefail

ctl=${1:?usage: lab_init.sh CTL_DIR}
read -r up _ </proc/uptime
echo "rxe lab: $up s: stage 2 started" >/dev/console
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

finish() {
  echo "$1" >"$ctl/rc.tmp" && mv "$ctl/rc.tmp" "$ctl/rc"
  sync
  echo o >/proc/sysrq-trigger
  exec 2>/dev/null # the shares go away while powering off
  while :; do sleep 60; done
}

# stdout/stderr of the command: virtio-serial ports (stage 1 made these links). A write
# returns once the host has taken the bytes, so nothing is lost at power-off.
exec 3>/dev/rxe-stdout 4>/dev/rxe-stderr 2>&4

fail() {
  echo "rxe lab: setup failed: $*" >&2
  finish 125
}
trap 'fail "unexpected error at line $LINENO"' ERR
if [ -f "$ctl/trace" ]; then # RXE_TRACE=1: timestamped xtrace of the lab setup on stderr
  PS4='+ ${EPOCHREALTIME} '
  set -x
fi

sysctl_set() { # NAME VALUE, without forking sysctl
  echo "$2" >"/proc/sys/${1//.//}"
}

setup_network() {
  echo rxe-lab >/proc/sys/kernel/hostname
  echo "127.0.1.1 rxe-lab" >>/etc/hosts # lands in the overlay's tmpfs, not on the host
  local k
  # "all" and "default" first, so that the veths inherit them.
  for k in all default lo; do
    sysctl_set "net.ipv4.conf.$k.accept_local" 1
    sysctl_set "net.ipv4.conf.$k.rp_filter" 0
  done
  ip -batch - <<'IP'
link set lo up
link add veth0 mtu 9000 type veth peer name veth1 mtu 9000
IP
  for k in veth0 veth1; do
    sysctl_set "net.ipv4.conf.$k.accept_local" 1
    sysctl_set "net.ipv4.conf.$k.rp_filter" 0
  done
  local mac0 mac1
  read -r mac0 </sys/class/net/veth0/address
  read -r mac1 </sys/class/net/veth1/address
  # Policy routing: local traffic to one end leaves through the other end's veth. Static
  # neighbours save the ARP round trip across the pair, unless RXE_NEIGH=arp asks for the
  # real way (a cold neighbour table, resolved by ARP as on a real network).
  local neigh="neigh replace 10.99.0.1 lladdr $mac0 dev veth1 nud permanent
neigh replace 10.99.0.2 lladdr $mac1 dev veth0 nud permanent"
  if [ "$neigh_mode" = arp ]; then neigh=""; fi
  ip -batch - <<IP
addr add 10.99.0.1/24 dev veth0
addr add 10.99.0.2/24 dev veth1
link set veth0 up
link set veth1 up
route add 10.99.0.1/32 dev veth1 src 10.99.0.2 table 101
route add 10.99.0.2/32 dev veth0 src 10.99.0.1 table 102
rule add pref 100 iif lo to 10.99.0.1 lookup 101
rule add pref 101 iif lo to 10.99.0.2 lookup 102
rule add pref 1000 lookup local
rule del pref 0 lookup local
$neigh
IP
  rdma link add rxe0 type rxe netdev veth0
  rdma link add rxe1 type rxe netdev veth1

  local i s0='' s1='' nap=''
  for ((i = 0; i < 200; i++)); do
    read -r s0 2>/dev/null </sys/class/infiniband/rxe0/ports/1/state || true
    read -r s1 2>/dev/null </sys/class/infiniband/rxe1/ports/1/state || true
    if [[ $s0 == *ACTIVE && $s1 == *ACTIVE ]]; then return 0; fi
    [ -n "$nap" ] || exec {nap}<> <(:) # a pipe nobody writes to: read -t on it sleeps
    read -r -t 0.05 -u "$nap" _ || true
  done
  fail "rxe0/rxe1 did not become ACTIVE (states: '$s0', '$s1')"
}

# RXE_NEIGH from the caller's environment (read again, with the rest, below).
neigh_mode=pinned
if grep -qz '^RXE_NEIGH=arp$' "$ctl/env"; then neigh_mode=arp; fi
setup_network
echo "rxe lab: neighbour entries $neigh_mode" >/dev/console
ulimit -l unlimited
ulimit -c 0
read -r up _ </proc/uptime
echo "rxe lab: lab ready ($up s after kernel start)" >/dev/console
echo "$up" >"$ctl/boot_s"

# The caller's environment (NUL-separated NAME=VALUE), less what only made sense there.
mapfile -d '' -t envs <"$ctl/env"
for kv in "${envs[@]}"; do
  name=${kv%%=*}
  [[ $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || continue
  case $name in
    PWD | OLDPWD | SHLVL | _ | PPID | BASHOPTS | SHELLOPTS | BASH_* | UID | EUID) continue ;;
  esac
  export "${kv?}"
done
export RXE_LAB=1
read -r RXE_OUT <"$ctl/out"
export RXE_OUT
if [ -n "${TMPDIR:-}" ]; then mkdir -p "$TMPDIR" || true; fi

mapfile -d '' -t cmd <"$ctl/cmd"
read -r cwd <"$ctl/cwd"
cd "$cwd" 2>/dev/null || { echo "rxe lab: cannot cd to $cwd, running in /" >&2; cd /; }

trap - ERR
set +ex
# A subshell so that the command is not PID 1 (signals, reaping) and sees plain fds.
(exec "${cmd[@]}" </dev/null >&3 2>&4 3>&- 4>&-)
finish $?
