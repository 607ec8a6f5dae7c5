#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Stage 1 of the Soft-RoCE lab VM: /init of the busybox initramfs that run_in_vm.sh builds.
# Loads the modules listed in /modules.list (dependency order), mounts the host's root
# read-only over virtio-9p under a tmpfs overlay, mounts the writable host shares listed in
# the control share, then switch_roots into the host's userland and runs lab_init.sh there.
# shellcheck shell=sh

/bin/busybox --install -s /bin
export PATH=/bin

mount -t devtmpfs devtmpfs /dev
# The initramfs has no /dev/console node; take the console now that devtmpfs is there.
exec </dev/console >/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sysfs /sys

# ttyS0 is the kernel console, a log file on the host. The command's stdout and stderr go
# through two virtio-serial ports, named rxe.stdout and rxe.stderr (see port()).

stamp() { # boot progress on the console log (RXE_VERBOSE=1 shows it)
  up='?'
  for f in /proc/uptime /newroot/proc/uptime; do
    [ -r $f ] && read -r up _ <$f && break
  done
  echo "rxe lab: $up s: $*"
}

port() { # NAME: the /dev node of the virtio-serial port called NAME (names come late)
  for _ in $(seq 200); do
    for p in /sys/class/virtio-ports/*; do
      if [ "$(cat "$p/name" 2>/dev/null)" = "$1" ] && [ -c "/dev/${p##*/}" ]; then
        echo "/dev/${p##*/}"
        return 0
      fi
    done
    usleep 10000
  done
  return 1
}

err=
die() {
  echo "rxe lab: init: $*"
  if [ -n "$err" ]; then echo "rxe lab: init: $*" >"$err"; fi
  sync
  poweroff -f
  sleep 30
}

stamp "init started"
while read -r ko; do
  insmod "/lib/modules/$ko" || die "insmod $ko failed"
done </modules.list

stamp "modules loaded"
err=$(port rxe.stderr) || die "no virtio-serial port rxe.stderr"
out=$(port rxe.stdout) || die "no virtio-serial port rxe.stdout"
opts=trans=virtio,version=9p2000.L,msize=512000
mkdir -p /ctl /lower /rw /newroot
mount -t 9p -o "$opts" rxectl /ctl || die "cannot mount the control share"
mount -t 9p -o "$opts,ro,cache=loose" rxeroot /lower || die "cannot mount the host root over 9p"
mount -t tmpfs -o mode=0755 tmpfs /rw || die "cannot mount tmpfs"
mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay /newroot \
  || die "cannot mount the overlay root"

mkdir -p /newroot/proc /newroot/sys /newroot/dev /newroot/tmp /newroot/run
mount --move /proc /newroot/proc
mount --move /sys /newroot/sys
mount --move /dev /newroot/dev
mkdir -p /newroot/dev/pts /newroot/dev/shm
ln -sf "$out" /newroot/dev/rxe-stdout
ln -sf "$err" /newroot/dev/rxe-stderr
ln -sf /proc/self/fd /newroot/dev/fd # what udev would add: bash's <(...) needs /dev/fd
ln -sf /proc/self/fd/0 /newroot/dev/stdin
ln -sf /proc/self/fd/1 /newroot/dev/stdout
ln -sf /proc/self/fd/2 /newroot/dev/stderr
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts /newroot/dev/pts
mount -t tmpfs -o mode=1777 tmpfs /newroot/dev/shm
mount -t tmpfs -o mode=0755 tmpfs /newroot/run
# /tmp stays the overlay's view of the host's /tmp (writes land in RAM), so that build trees
# and binaries under /tmp still run; RXE_CLEAN_TMP=1 asks for an empty tmpfs instead.
if [ -e /ctl/clean_tmp ]; then mount -t tmpfs -o mode=1777 tmpfs /newroot/tmp; fi

# Writable host directories, one 9p share each: lines "TAG PATH", shortest path first.
while read -r tag path; do
  [ -n "$tag" ] || continue
  mkdir -p "/newroot$path" || die "cannot create $path"
  mount -t 9p -o "$opts" "$tag" "/newroot$path" || die "cannot mount $path read-write"
done </ctl/mounts

stamp "root mounted"
ctlpath=$(cat /ctl/path)
mkdir -p "/newroot$ctlpath"
mount --move /ctl "/newroot$ctlpath" || die "cannot move the control share"
stamp "switching root"
# shellcheck disable=SC2093 # the die below only runs if switch_root itself fails
exec switch_root /newroot /bin/bash "$ctlpath/lab_init.sh" "$ctlpath"
die "switch_root failed"
