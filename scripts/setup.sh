#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs every Debian 12 package rdmavideo needs to build, test and benchmark. Idempotent,
# and silent when everything is already there.
set -euo pipefail

packages=(
  # toolchain
  g++ cmake ninja-build pkg-config git python3
  # libraries librdmavideo and the tools use
  libcli11-dev libspdlog-dev libfmt-dev libxxhash-dev libexpected-dev nlohmann-json3-dev
  libssl-dev  # OpenSSL: HMAC-SHA256, HKDF and the random generator of authentication
  libcpp-httplib-dev  # rdmavideo-recv --metrics
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev  # the fuzz targets: clang's libFuzzer and sanitizer runtimes
  ffmpeg gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good
  gstreamer1.0-plugins-bad
  xvfb x11-apps x11-utils imagemagick xdotool openbox  # display_test: a virtual screen, xwd,
  # xprop, convert, keys, and a window manager (on X11 it is what makes a window fullscreen)
  # optional parts CMake detects (RDMA verbs, FFmpeg codecs, GStreamer plugin, SDL2 display)
  libibverbs-dev librdmacm-dev rdma-core ibverbs-providers
  libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libavdevice-dev
  libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev libsdl2-dev
  # Soft-RoCE lab (tests/rxe): a QEMU VM booting the distribution kernel, which has rdma_rxe
  qemu-system-x86 busybox-static linux-image-amd64 cpio xz-utils
  ibverbs-utils rdmacm-utils perftest iproute2
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  sudo=sudo
else
  sudo=
fi
echo "setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
