#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Debian packages as a user meets them: `apt-get install ./*.deb` into a fresh Debian 12
# root made from Debian's own packages (mmdebstrap), then, in that root (chroot):
#   - gst-inspect-1.0 finds rdmasrc and rdmasink with no environment set;
#   - rdmavideo-recv --version runs, and its man page is there;
#   - the C example (from librdmavideo-dev) compiles with pkg-config and sends into
#     rdmavideo-recv --verify, every frame verified;
#   - the C++ example builds with CMake's find_package(rdmavideo 0.5);
#   - python3 -c "import rdmavideo" works, and a Python sender sends into rdmavideo-recv;
# and `apt-get purge` of the packages leaves no file of theirs behind.
#
# The base root (Debian 12 with what the packages depend on, and the tools the checks use) is
# made once and kept as a tarball under $RDMAVIDEO_DEBIAN_ROOT_CACHE (default
# /var/cache/rdmavideo/debian-root), named by a hash of that list: a new dependency makes a new
# one. Every run unpacks a fresh copy and installs the packages into it with apt.
#   install_test.sh DEB_DIR WORK_DIR
set -euo pipefail
debs=$(cd "$1" && pwd)
work=$2
cache=${RDMAVIDEO_DEBIAN_ROOT_CACHE:-/var/cache/rdmavideo/debian-root}
ours=(rdmavideo-tools librdmavideo0 librdmavideo-dev gstreamer1.0-rdmavideo obs-rdmavideo
      python3-rdmavideo)
[ "$(id -u)" = 0 ] || { echo "debian install test: needs root (chroot)"; exit 77; }
command -v mmdebstrap >/dev/null || { echo "debian install test: no mmdebstrap"; exit 77; }
ls "$debs"/*.deb >/dev/null

# What the packages need from Debian, and what the checks use.
deps=$(for d in "$debs"/*.deb; do dpkg-deb -f "$d" Depends; done | tr ',' '\n' |
  sed -E 's/\(.*\)//; s/\|.*//; s/:any//; s/[[:space:]]//g' | grep -v '^$' | sort -u |
  grep -vxF -f <(printf '%s\n' "${ours[@]}") || true)
tools="gstreamer1.0-tools gcc g++ libc6-dev pkg-config cmake make python3"
key=$(echo "$deps $tools" | sha256sum | cut -c1-16)
base=$cache/bookworm-$key.tar
if [ ! -f "$base" ]; then
  mkdir -p "$cache"
  echo "debian install test: making the base root $base (once)"
  start=$SECONDS
  # shellcheck disable=SC2086  # the lists are words
  mmdebstrap --verbose --variant=apt --include="$(echo $deps $tools | tr ' ' ,)" bookworm "${base%.tar}.part.tar" \
    "deb http://deb.debian.org/debian bookworm main" \
    "deb http://deb.debian.org/debian bookworm-updates main" \
    "deb http://deb.debian.org/debian-security bookworm-security main" >"$cache/mmdebstrap.log" 2>&1 ||
    { tail -30 "$cache/mmdebstrap.log"; exit 1; }
  mv "${base%.tar}.part.tar" "$base"
  echo "debian install test: base root made in $((SECONDS - start)) s"
fi

# A run that died may have left its mounts: undo them before removing anything, and never
# remove across a file system boundary.
grep -o " $(realpath -m "$work")/[^ ]*" /proc/mounts | sort -r | xargs -r -n1 umount -l || true
rm -rf --one-file-system "$work"
root=$work/root
mkdir -p "$root"
mounted=()
cleanup() {
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
}
trap cleanup EXIT
tar -C "$root" -xf "$base"
for m in proc sys dev dev/pts; do
  mkdir -p "$root/$m"
  mount --bind "/$m" "$root/$m"
  mounted+=("$root/$m")
done
mkdir -p "$root/debs" "$root/examples"
cp "$debs"/*.deb "$root/debs/"
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
  LANG=C.UTF-8 "$@"; }

# Nothing of ours there before.
for p in "${ours[@]}"; do
  if in_root dpkg -s "$p" >/dev/null 2>&1; then echo "$p is in the base root" >&2; exit 1; fi
done
# apt resolves the packages' dependencies itself (all in the base root already: no download).
in_root apt-get install -y --no-install-recommends -o Debug::pkgProblemResolver=0 \
  $(cd "$root/debs" && printf '/debs/%s ' *.deb) >"$work/apt-install.log" 2>&1 ||
  { tail -30 "$work/apt-install.log"; exit 1; }
for p in "${ours[@]}"; do in_root dpkg -L "$p"; done | sort -u >"$work/files"

in_root gst-inspect-1.0 rdmasrc >"$work/gst-inspect.txt" 2>&1 ||
  { cat "$work/gst-inspect.txt"; echo "gst-inspect-1.0 rdmasrc failed in the root" >&2; exit 1; }
grep -q "rdmasrc" "$work/gst-inspect.txt"
in_root gst-inspect-1.0 rdmasink >/dev/null
in_root rdmavideo-recv --version | tee "$work/version.txt"
grep -q "0.5.0" "$work/version.txt"
in_root test -f /usr/share/man/man1/rdmavideo-recv.1.gz
in_root test -f /usr/lib/x86_64-linux-gnu/obs-plugins/rdmavideo-obs.so

cat >"$root/examples/run.sh" <<'SH'
set -eu
cd /examples
ex=/usr/share/doc/librdmavideo-dev/examples
cc -std=c99 -Wall -Werror "$ex/c_sender/sender.c" $(pkg-config --cflags --libs rdmavideo) -lm \
  -o sender
cmake -S "$ex" -B build >/dev/null && cmake --build build >/dev/null
wait_port() {
  for i in $(seq 1 100); do
    port=$(sed -nE 's/.*listening on 127\.0\.0\.1:([0-9]+) .*/\1/p' "$1" | head -1)
    [ -n "$port" ] && { echo "$port"; return 0; }
    sleep 0.1
  done
  cat "$1" >&2
  return 1
}
rdmavideo-recv --listen 127.0.0.1:0 --verify --quiet 2>recv.log &
recv=$!
./sender -n 60 -s 320x240 "127.0.0.1:$(wait_port recv.log)"
wait "$recv"
grep "60 frames .*checksum failures 0" recv.log
python3 -c "import rdmavideo; print('python:', rdmavideo.version())"
rdmavideo-recv --listen 127.0.0.1:0 --verify --quiet 2>recv2.log &
recv=$!
python3 "$ex/python/sender.py" -n 30 -s 320x240 "127.0.0.1:$(wait_port recv2.log)"
wait "$recv"
grep "30 frames .*checksum failures 0" recv2.log
SH
in_root sh /examples/run.sh 2>&1 | tee "$work/examples.log"

# Purged, nothing of theirs is left (a folder another package shares may stay).
in_root apt-get purge -y "${ours[@]}" >"$work/apt-purge.log" 2>&1 ||
  { tail -30 "$work/apt-purge.log"; exit 1; }
left=()
while read -r f; do
  [ -e "$root$f" ] || [ -L "$root$f" ] || continue
  [ -d "$root$f" ] && [ -n "$(ls -A "$root$f")" ] && continue  # shared and still in use
  [ -d "$root$f" ] && in_root dpkg -S "$f" >/dev/null 2>&1 && continue  # another package's
  left+=("$f")
done <"$work/files"
if [ ${#left[@]} -gt 0 ]; then
  printf 'left behind after purge: %s\n' "${left[@]}" >&2
  exit 1
fi
echo "debian install test: installed with apt, every check passed in the root, purged clean" \
  "($(wc -l <"$work/files") paths)"
