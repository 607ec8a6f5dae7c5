#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run_in_vm.sh COMMAND [ARG...]
#
# Runs COMMAND inside a small QEMU VM that has a Soft-RoCE (rdma_rxe) lab: the host's own
# kernel image from /boot, a busybox initramfs built on the fly, the host's root mounted
# read-only over virtio-9p under a tmpfs overlay (so the VM runs the host's userland and
# this build tree at the same paths), a veth pair veth0 10.99.0.1 / veth1 10.99.0.2 with
# MTU 9000, rxe0 on veth0 and rxe1 on veth1, and policy routing so that traffic between
# the two addresses really crosses the pair. See tests/rxe/README.md.
#
# COMMAND runs as root in the caller's working directory with the caller's environment
# plus RXE_LAB=1 and RXE_OUT, stdin /dev/null, `ulimit -l unlimited`; its stdout and stderr
# come out on this script's stdout and stderr, and its exit status is this script's.
#
# Exit status: COMMAND's; 77 with "rxe lab skipped: <reason>" when qemu, a kernel image
# with rdma_rxe modules, or a static busybox is missing; 124 when RXE_TIMEOUT ran out;
# 125 when the lab itself failed (boot, modules, setup).
#
# Environment:
#   RXE_TIMEOUT    hard limit in seconds for the whole VM run (default 600)
#   RXE_ACCEL      tcg (default), kvm, or auto (kvm if a 20 s probe boot works, else tcg;
#                  the verdict is cached)
#   RXE_MEM        VM memory in MiB (default 2048)     RXE_CPUS  vCPUs (default 2)
#   RXE_CPU_MODEL  QEMU -cpu under TCG (default max,-erms,-fsrm)
#   RXE_CACHE      where the initramfs is cached (default ${TMPDIR:-/tmp}/rdmavideo-rxe-$UID)
#   RXE_OUT        host directory shared read-write at the same path, for results (created
#                  if missing, kept); default: a fresh temporary directory, removed at exit
#   RXE_SHARE_RW   more host directories (colon-separated) shared read-write at their paths;
#                  everything else the VM sees is a throw-away copy-on-write view of the host
#   RXE_KERNEL     kernel image (default: newest /boot/vmlinuz-* whose modules have rdma_rxe)
#   RXE_KVER       its module version (default: from the image name)
#   RXE_QEMU       qemu binary (default qemu-system-x86_64)   RXE_BUSYBOX  static busybox
#   RXE_CLEAN_TMP=1  give the VM an empty tmpfs /tmp instead of the host's /tmp (copy-on-write)
#   RXE_VERBOSE=1  print timings and the guest console log to stderr
#   RXE_TRACE=1    timestamped xtrace of the in-VM lab setup on stderr
set -euo pipefail
{ # Parsed whole before it runs, so that editing this file cannot derail a run in progress.

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)

skip() {
  echo "rxe lab skipped: $*"
  exit 77
}
die() {
  echo "rxe lab: $*" >&2
  exit 125
}
verbose() {
  if [ "${RXE_VERBOSE:-0}" = 1 ]; then echo "rxe lab: $*" >&2; fi
}

if [ $# -eq 0 ]; then
  sed -n '3,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi

timeout_s=${RXE_TIMEOUT:-600}
mem=${RXE_MEM:-2048}
cpus=${RXE_CPUS:-2}
accel=${RXE_ACCEL:-tcg}
[[ $timeout_s =~ ^[0-9]+$ ]] || die "RXE_TIMEOUT must be a number of seconds"

# --- what the lab needs from the host ------------------------------------------------------
qemu=${RXE_QEMU:-qemu-system-x86_64}
command -v "$qemu" >/dev/null 2>&1 || skip "$qemu not found (install qemu-system-x86)"
qemu=$(command -v "$qemu")

is_static() { # ELF without an interpreter; `ldd` fails on static binaries
  if command -v ldd >/dev/null 2>&1 && ldd "$1" >/dev/null 2>&1; then return 1; fi
  return 0
}
busybox=
for b in ${RXE_BUSYBOX:+"$RXE_BUSYBOX"} /usr/bin/busybox /bin/busybox "$(command -v busybox || true)"; do
  if [ -n "$b" ] && [ -x "$b" ] && is_static "$b"; then
    busybox=$b
    break
  fi
done
[ -n "$busybox" ] || skip "no statically linked busybox (install busybox-static)"

has_rxe() { compgen -G "$1/kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko*" >/dev/null; }
if [ -n "${RXE_KERNEL:-}" ]; then
  kernel=$RXE_KERNEL
  kver=${RXE_KVER:-$(basename "$kernel" | sed 's/^vmlinuz-//')}
  [ -f "$kernel" ] || skip "kernel image $kernel not found"
else
  kernel=
  kver=
  while IFS= read -r k; do
    v=${k#/boot/vmlinuz-}
    if has_rxe "/lib/modules/$v"; then
      kernel=$k
      kver=$v
      break
    fi
  done < <(compgen -G '/boot/vmlinuz-*' | sort -V -r)
  [ -n "$kernel" ] || skip "no /boot/vmlinuz-* with rdma_rxe in /lib/modules (install linux-image-amd64)"
fi
moddir=/lib/modules/$kver
has_rxe "$moddir" || skip "no rdma_rxe module in $moddir for kernel $kernel"
[ -r "$kernel" ] || skip "kernel image $kernel is not readable by $(id -un)"

# --- the initramfs (cached) ------------------------------------------------------------------
# Modules the lab loads, in this order, each after its modules.dep dependencies.
# crc32_generic: rdma_rxe allocates the "crc32" shash for its ICRC when a device is added.
modules=(virtio_pci virtio_console 9pnet_virtio 9p overlay veth crc32_generic
  ib_core ib_uverbs iw_cm ib_cm rdma_cm rdma_ucm rdma_rxe)

cache=${RXE_CACHE:-${TMPDIR:-/tmp}/rdmavideo-rxe-$(id -u)}
mkdir -p "$cache"
key=$( {
  echo "v1 $kver ${modules[*]}"
  stat -L -c '%s %Y' "$kernel" "$busybox" "$moddir/modules.dep"
  cat "$here/initramfs_init.sh"
} | sha256sum | cut -c1-16)
initrd=$cache/initramfs-$kver-$key.cpio

modname() { # kernel/drivers/net/veth.ko.xz -> veth (module names use _ for -)
  local n=${1##*/}
  n=${n%%.ko*}
  echo "${n//-/_}"
}

build_initramfs() {
  local tmp root
  tmp=$(mktemp -d "$cache/build.XXXXXX")
  root=$tmp/root
  mkdir -p "$root"/{bin,dev,proc,sys,lib/modules}
  cp "$busybox" "$root/bin/busybox"
  ln -s busybox "$root/bin/sh"
  install -m 0755 "$here/initramfs_init.sh" "$root/init"

  local -A path deps builtin seen
  local line name
  while IFS= read -r line; do
    name=${line%%:*}
    name=${name##*/}
    name=${name%%.ko*}
    name=${name//-/_}
    path[$name]=${line%%:*}
    deps[$name]=${line#*:}
  done <"$moddir/modules.dep"
  if [ -f "$moddir/modules.builtin" ]; then
    while IFS= read -r line; do
      name=${line##*/}
      name=${name%%.ko*}
      builtin[${name//-/_}]=1
    done <"$moddir/modules.builtin"
  fi

  local order=()
  visit() {
    local n=$1 d
    [ -z "${seen[$n]:-}" ] || return 0
    seen[$n]=1
    if [ -z "${path[$n]:-}" ]; then
      [ -n "${builtin[$n]:-}" ] && return 0
      echo "rxe lab: module $n is neither in $moddir/modules.dep nor built in" >&2
      return 1
    fi
    for d in ${deps[$n]}; do visit "$(modname "$d")" || return 1; done
    order+=("$n")
  }
  local m
  for m in "${modules[@]}"; do visit "$m" || return 1; done

  local i=0 src dst
  : >"$root/modules.list"
  for m in "${order[@]}"; do
    src=$moddir/${path[$m]}
    dst=$(printf '%02d-%s.ko' "$i" "$m")
    case $src in
      *.ko) cp "$src" "$root/lib/modules/$dst" ;;
      *.ko.xz) xz -dc "$src" >"$root/lib/modules/$dst" ;;
      *.ko.zst) zstd -qdc "$src" >"$root/lib/modules/$dst" ;;
      *.ko.gz) gzip -dc "$src" >"$root/lib/modules/$dst" ;;
      *) echo "rxe lab: unknown module format $src" >&2; return 1 ;;
    esac
    echo "$dst" >>"$root/modules.list"
    i=$((i + 1))
  done

  if command -v cpio >/dev/null 2>&1; then
    (cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$tmp/initramfs.cpio"
  else
    (cd "$root" && find . | LC_ALL=C sort | "$busybox" cpio -o -H newc) >"$tmp/initramfs.cpio" 2>/dev/null
  fi
  mv -f "$tmp/initramfs.cpio" "$initrd" # atomic: concurrent runs may build the same file
  rm -rf "$tmp"
  # Drop initramfs images of earlier versions of the init script (an hour old or more).
  find "$cache" -maxdepth 1 -name 'initramfs-*.cpio' ! -name "${initrd##*/}" -mmin +60 -delete \
    2>/dev/null || true
}

if [ ! -s "$initrd" ]; then
  verbose "building $initrd (kernel $kver)"
  build_initramfs || die "could not build the initramfs"
fi

# --- the kernel, uncompressed (cached) -------------------------------------------------------
# QEMU boots an uncompressed ELF vmlinux through its PVH entry point; that skips the real-mode
# setup and the in-guest decompression of the bzImage (about 2 s under TCG). Extract it once,
# like the kernel's scripts/extract-vmlinux; fall back to the bzImage if that fails.
boot_kernel=$kernel
extract_vmlinux() { # BZIMAGE OUT: the first embedded stream that decompresses to an ELF
  local fmt magic tool off
  for fmt in 'xz \xfd7zXZ\x00' 'zstd \x28\xb5\x2f\xfd' 'gzip \x1f\x8b\x08'; do
    magic=${fmt#* }
    tool=${fmt%% *}
    command -v "$tool" >/dev/null 2>&1 || continue
    while IFS=: read -r off _; do
      case $tool in
        xz) tail -c +"$((off + 1))" "$1" | xz -dc --single-stream >"$2" 2>/dev/null || true ;;
        zstd) tail -c +"$((off + 1))" "$1" | zstd -qdc >"$2" 2>/dev/null || true ;;
        gzip) tail -c +"$((off + 1))" "$1" | gzip -dc >"$2" 2>/dev/null || true ;;
      esac
      # An ELF with a Xen PHYS32_ENTRY note (type 0x12): the PVH entry QEMU needs.
      if [ "$(head -c 4 "$2" | od -An -c | tr -d ' ')" = '177ELF' ] &&
        LC_ALL=C grep -qaP '\x04\x00\x00\x00[\x04\x08]\x00\x00\x00\x12\x00\x00\x00Xen\x00' "$2"; then
        return 0
      fi
    done < <(LC_ALL=C grep -obUaP "$magic" "$1" 2>/dev/null | head -n 3)
  done
  return 1
}
if [ "${RXE_PVH:-1}" = 1 ]; then
  kkey=$(stat -L -c '%s %Y' "$kernel" | sha256sum | cut -c1-12)
  vmlinux=$cache/vmlinux-$kver-$kkey
  if [ ! -s "$vmlinux" ] && [ ! -e "$vmlinux.none" ]; then
    verbose "extracting $vmlinux"
    if extract_vmlinux "$kernel" "$vmlinux.tmp.$$"; then
      mv -f "$vmlinux.tmp.$$" "$vmlinux"
    else
      rm -f "$vmlinux.tmp.$$"
      : >"$vmlinux.none" # this image has no PVH vmlinux inside: boot the bzImage
    fi
  fi
  if [ -s "$vmlinux" ]; then boot_kernel=$vmlinux; fi
fi

# --- per-run directories ---------------------------------------------------------------------
ctl=$(mktemp -d "${TMPDIR:-/tmp}/rxe-ctl.XXXXXX")
own_out=
if [ -n "${RXE_OUT:-}" ]; then
  mkdir -p "$RXE_OUT"
  out=$(cd "$RXE_OUT" && pwd -P)
else
  out=$(mktemp -d "${TMPDIR:-/tmp}/rxe-out.XXXXXX")
  own_out=1
fi
qpid=
# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
  if [ -n "$qpid" ]; then kill -KILL "$qpid" 2>/dev/null || true; fi
  rm -rf "$ctl"
  if [ -n "$own_out" ]; then rm -rf "$out"; fi
}
trap cleanup EXIT

cp "$here/lab_init.sh" "$ctl/lab_init.sh"
echo "$ctl" >"$ctl/path"
echo "$out" >"$ctl/out"
pwd -P >"$ctl/cwd"
printf '%s\0' "$@" >"$ctl/cmd"
env -0 >"$ctl/env"
if [ "${RXE_TRACE:-0}" = 1 ]; then : >"$ctl/trace"; fi
if [ "${RXE_CLEAN_TMP:-0}" = 1 ]; then : >"$ctl/clean_tmp"; fi

share_args=(-virtfs "local,path=$ctl,mount_tag=rxectl,security_model=none")
shares=("rxeout $out")
i=0
IFS=: read -r -a rw_dirs <<<"${RXE_SHARE_RW:-}"
for d in "${rw_dirs[@]}"; do
  [ -n "$d" ] || continue
  [ -d "$d" ] || die "RXE_SHARE_RW: $d is not a directory"
  d=$(cd "$d" && pwd -P)
  shares+=("rxerw$i $d")
  i=$((i + 1))
done
for s in "${shares[@]}"; do
  case $s in *,* | *$'\n'*) die "cannot share a path with a comma or newline: ${s#* }" ;; esac
  share_args+=(-virtfs "local,path=${s#* },mount_tag=${s%% *},security_model=none")
done
# Shortest path first so that nested shares mount over their parents.
for s in "${shares[@]}"; do echo "${#s} $s"; done | sort -n | cut -d' ' -f2- >"$ctl/mounts"

mkfifo "$ctl/stdout.fifo" "$ctl/stderr.fifo"
cat "$ctl/stdout.fifo" &
cat_out=$!
cat "$ctl/stderr.fifo" >&2 &
cat_err=$!

# --- accelerator -----------------------------------------------------------------------------
kvm_usable() { [ -r /dev/kvm ] && [ -w /dev/kvm ]; }
if [ "$accel" = auto ]; then
  stamp=$cache/kvm-verdict
  if ! kvm_usable; then
    accel=tcg
  elif [ -f "$stamp" ]; then
    accel=$(cat "$stamp")
  else
    verbose "probing KVM (20 s limit)"
    if RXE_ACCEL=kvm RXE_TIMEOUT=20 RXE_OUT='' RXE_SHARE_RW='' "${BASH_SOURCE[0]}" true \
      >/dev/null 2>&1 </dev/null; then
      accel=kvm
    else
      accel=tcg
    fi
    echo "$accel" >"$stamp"
  fi
fi
case $accel in
  kvm)
    kvm_usable || die "RXE_ACCEL=kvm but /dev/kvm is not usable"
    accel_args=(-accel kvm -cpu "host,-arch-capabilities")
    ;;
  # Everything TCG emulates (AVX2 included, so host-built binaries run), less ERMS/FSRM:
  # with them the kernel copies with `rep movsb`, which TCG runs a byte at a time; rxe's
  # payload copies get about 2x faster without.
  tcg) accel_args=(-accel "tcg,thread=multi" -cpu "${RXE_CPU_MODEL:-max,-erms,-fsrm}") ;;
  *) die "RXE_ACCEL must be tcg, kvm or auto" ;;
esac

# --- boot ------------------------------------------------------------------------------------
cmdline="console=ttyS0 ${RXE_KERNEL_DEBUG:-quiet loglevel=1} panic=-1 8250.nr_uarts=1 mitigations=off"
cmdline+=" tsc=reliable no_timer_check lpj=10000000 random.trust_cpu=on rdinit=/init"
qemu_args=(
  -nodefaults -no-user-config -display none -vga none -no-reboot
  -machine q35 "${accel_args[@]}" -smp "$cpus" -m "$mem"
  -kernel "$boot_kernel" -initrd "$initrd" -append "$cmdline"
  -serial "file:$ctl/console.log"
  -device "virtio-serial-pci,id=vser"
  -chardev "file,id=rxeout,path=$ctl/stdout.fifo"
  -device "virtserialport,bus=vser.0,nr=1,chardev=rxeout,name=rxe.stdout"
  -chardev "file,id=rxeerr,path=$ctl/stderr.fifo"
  -device "virtserialport,bus=vser.0,nr=2,chardev=rxeerr,name=rxe.stderr"
  "${share_args[@]}"
  -virtfs "local,path=/,mount_tag=rxeroot,security_model=none,readonly=on,multidevs=remap"
)
verbose "booting $boot_kernel ($accel, ${cpus} vCPU, ${mem} MiB)"
start=$(date +%s.%N)
set +e
timeout -k 5 "$timeout_s" "$qemu" "${qemu_args[@]}" </dev/null &
qpid=$!
interrupted=
trap 'interrupted=1; kill -TERM "$qpid" 2>/dev/null' INT TERM HUP
while :; do
  wait "$qpid"
  qrc=$?
  kill -0 "$qpid" 2>/dev/null || break
done
qpid=
set -e
wait "$cat_out" "$cat_err" 2>/dev/null || true
end=$(date +%s.%N)

if [ "${RXE_VERBOSE:-0}" = 1 ]; then
  echo "rxe lab: --- guest console ---" >&2
  cat "$ctl/console.log" >&2 2>/dev/null || true
  echo "rxe lab: --- end of guest console ---" >&2
  if [ -f "$ctl/boot_s" ]; then verbose "lab ready $(cat "$ctl/boot_s") s after kernel start"; fi
  verbose "VM ran $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s wall (qemu exit $qrc)"
fi

if [ -n "$interrupted" ]; then
  echo "rxe lab: interrupted, VM stopped" >&2
  exit 130
fi
if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
  echo "rxe lab: timed out after ${timeout_s} s (RXE_TIMEOUT), VM killed" >&2
  exit 124
fi
if [ ! -f "$ctl/rc" ]; then
  echo "rxe lab: the VM stopped without an exit status (qemu exit $qrc); guest console:" >&2
  tail -n 40 "$ctl/console.log" >&2 2>/dev/null || true
  exit 125
fi
rc=$(cat "$ctl/rc")
[[ $rc =~ ^[0-9]+$ ]] || die "bad exit status from the VM: $rc"
exit "$rc"
}
