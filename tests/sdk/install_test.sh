#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The SDK as a developer gets it: installed (cmake --install, the sdk and sdk_dev components)
# into a prefix of its own, and the examples built out of tree against that prefix, with
# find_package(rdmavideo 0.5) and with pkg-config. Then, over TCP on loopback:
#   - the C sender example (CMake) into the C++ receiver example (CMake): every frame's
#     checksum the same at both ends, and a picture saved;
#   - the C sender example (pkg-config) into rdmavideo-recv --verify: every frame's checksum
#     checked by the receiver the project ships.
# install_test.sh BUILD_DIR SOURCE_DIR RDMAVIDEO_RECV WORK_DIR
set -euo pipefail
build=$1 src=$2 recv=$3 work=$4
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
for component in sdk sdk_dev; do
  cmake --install "$build" --prefix "$prefix" --component "$component" >/dev/null
done

# Exactly the SDK's files, where a developer looks for them (lib/ is Debian's multiarch
# folder where the build is configured to install under /usr).
libdir=$(cd "$prefix" && dirname "$(find . -name librdmavideo.so.0)")
(cd "$prefix" && find . -type f -o -type l | sort | sed "s#^$libdir/#./lib/#") >"$work/installed"
cat >"$work/expected" <<'LIST'
./include/rdmavideo/rdmavideo.h
./lib/cmake/rdmavideo/rdmavideoConfig.cmake
./lib/cmake/rdmavideo/rdmavideoConfigVersion.cmake
./lib/cmake/rdmavideo/rdmavideoTargets-relwithdebinfo.cmake
./lib/cmake/rdmavideo/rdmavideoTargets.cmake
./lib/librdmavideo.so
./lib/librdmavideo.so.0
./lib/librdmavideo.so.0.5.0
./lib/pkgconfig/rdmavideo.pc
./share/doc/librdmavideo-dev/changelog.Debian.gz
./share/doc/librdmavideo-dev/copyright
./share/doc/librdmavideo-dev/examples/CMakeLists.txt
./share/doc/librdmavideo-dev/examples/c_sender/sender.c
./share/doc/librdmavideo-dev/examples/cpp_receiver/receiver.cpp
./share/doc/librdmavideo-dev/examples/python/receiver.py
./share/doc/librdmavideo-dev/examples/python/sender.py
./share/doc/librdmavideo-dev/sdk.md
./share/doc/librdmavideo0/changelog.Debian.gz
./share/doc/librdmavideo0/copyright
LIST
# The build type names one file; compare without it.
sed -i 's/rdmavideoTargets-[a-z]*\.cmake/rdmavideoTargets-CONFIG.cmake/' "$work/installed" "$work/expected"
if ! diff -u "$work/expected" "$work/installed"; then
  echo "install_test: the SDK installs other files than these" >&2
  exit 1
fi

# Out of tree, with CMake: an older or newer minor version is refused.
cmake -S "$src/examples" -B "$work/examples" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" >"$work/examples.log" 2>&1 || { cat "$work/examples.log"; exit 1; }
cmake --build "$work/examples" >>"$work/examples.log" 2>&1 || { cat "$work/examples.log"; exit 1; }
mkdir -p "$work/newer"
sed 's/find_package(rdmavideo 0.5 REQUIRED)/find_package(rdmavideo 0.6 REQUIRED)/' \
  "$src/examples/CMakeLists.txt" >"$work/newer/CMakeLists.txt"
cp -r "$src/examples/c_sender" "$src/examples/cpp_receiver" "$work/newer/"
if cmake -S "$work/newer" -B "$work/newer/build" -DCMAKE_PREFIX_PATH="$prefix" \
  >"$work/newer.log" 2>&1; then
  echo "install_test: find_package(rdmavideo 0.6) took version 0.5" >&2
  exit 1
fi
grep -q "0.5.0" "$work/newer.log" || { cat "$work/newer.log"; exit 1; }

# Out of tree, with pkg-config.
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
[ "$(pkg-config --modversion rdmavideo)" = 0.5.0 ] || { echo "pkg-config: wrong version" >&2; exit 1; }
# shellcheck disable=SC2046  # pkg-config's words are separate arguments
cc -std=c99 -Wall -Wextra -Werror "$src/examples/c_sender/sender.c" \
  $(pkg-config --cflags --libs rdmavideo) -lm -o "$work/sender-pkg-config"
# The pkg-config build has no run path: the library is found as an installed one would be.
export LD_LIBRARY_PATH=$prefix/$libdir

wait_port() {  # wait_port LOG PATTERN: the port a program said it listens on
  local i port
  for i in $(seq 1 100); do
    port=$(sed -nE "s/$2/\\1/p" "$1" | head -1)
    if [ -n "$port" ]; then echo "$port"; return 0; fi
    sleep 0.1
  done
  echo "install_test: no port in $1:" >&2
  cat "$1" >&2
  return 1
}

# C sender -> C++ receiver.
"$work/examples/rdmavideo-example-receiver" 127.0.0.1:0 "$work/received.txt" "$work/first.ppm" \
  >"$work/receiver.log" 2>&1 &
receiver=$!
port=$(wait_port "$work/receiver.log" '.*listening on port ([0-9]+).*')
"$work/examples/rdmavideo-example-sender" -n 120 -s 640x360 -c "$work/sent.txt" "127.0.0.1:$port" \
  >"$work/sender.log" 2>&1 || { cat "$work/sender.log"; exit 1; }
wait "$receiver" || { cat "$work/receiver.log"; exit 1; }
cat "$work/sender.log" "$work/receiver.log"
[ "$(wc -l <"$work/sent.txt")" -eq 120 ] || { echo "the sender wrote $(wc -l <"$work/sent.txt") checksums" >&2; exit 1; }
if ! diff -q "$work/sent.txt" "$work/received.txt" >/dev/null; then
  echo "install_test: the frames received are not the frames sent:" >&2
  diff "$work/sent.txt" "$work/received.txt" | head >&2
  exit 1
fi
[ "$(head -c 15 "$work/first.ppm")" = "$(printf 'P6\n640 360\n255')" ] ||
  { echo "install_test: no picture saved" >&2; exit 1; }
[ "$(stat -c %s "$work/first.ppm")" -eq $((15 + 640 * 360 * 3)) ] ||
  { echo "install_test: the picture is not 640x360 RGB" >&2; exit 1; }

# C sender (pkg-config) -> rdmavideo-recv --verify.
"$recv" --listen 127.0.0.1:0 --verify --quiet >"$work/recv.log" 2>&1 &
receiver=$!
port=$(wait_port "$work/recv.log" '.*listening on 127\.0\.0\.1:([0-9]+) .*')
"$work/sender-pkg-config" -n 60 -s 320x240 -1 "127.0.0.1:$port" >"$work/sender2.log" 2>&1 ||
  { cat "$work/sender2.log"; exit 1; }
wait "$receiver" || { cat "$work/recv.log"; exit 1; }
cat "$work/sender2.log" "$work/recv.log"
grep -q "sent 60 frames of 320x240 rgba (0 dropped)" "$work/sender2.log"
grep -qE "60 frames .*checksum failures 0" "$work/recv.log" ||
  { echo "rdmavideo-recv did not verify 60 frames" >&2; exit 1; }
echo "install_test: the installed SDK builds the examples out of tree, and they work"
