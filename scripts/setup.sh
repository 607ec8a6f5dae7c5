#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs every Debian 12 package rdmavideo needs to build, test and benchmark. Idempotent,
# and silent when everything is already there.
set -euo pipefail

packages=(
  # toolchain
  g++ cmake ninja-build pkg-config git python3
  ccache  # scripts/build.sh compiles through it
  lld  # and links with it
  clang-format clang-tidy  # scripts/check-format.sh, scripts/check-lint.sh
  # libraries librdmavideo and the tools use
  libcli11-dev libspdlog-dev libfmt-dev libxxhash-dev libexpected-dev nlohmann-json3-dev
  libssl-dev  # OpenSSL: HMAC-SHA256, HKDF and the random generator of authentication
  libmicrohttpd-dev  # rdmavideo-recv --metrics
  libcpp-httplib-dev  # the tests' HTTP client
  libtomlplusplus-dev  # rdmavideo-recv --layout: the composite's tiles
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev  # the fuzz targets: clang's libFuzzer and sanitizer runtimes
  ffmpeg gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good
  gstreamer1.0-plugins-bad
  mediainfo  # names the profile of a ProRes file the project's own encoder wrote
  iperf3  # bench/run_tcp_bench.py: the kernel's TCP at its best, beside rdmavideo
  python3-numpy  # the Python module (python/rdmavideo) hands frames over as numpy arrays
  abigail-tools  # abidiff: the C API's ABI against its baseline (sdk/abi)
  help2man lintian mmdebstrap  # the Debian packages: man pages, their check, a fresh root
  # DNS-SD: Avahi's client library; its daemon, avahi-browse and python3-zeroconf for the tests
  # (two implementations the project did not write see what it advertises); python3-jsonschema
  # checks the NMOS APIs' bodies against their schemas; dnsmasq (its binary alone) serves a
  # facility's unicast DNS-SD records to the registry tests
  libavahi-client-dev avahi-daemon avahi-utils python3-zeroconf python3-jsonschema dnsmasq-base
  xvfb x11-apps x11-utils imagemagick xdotool openbox  # display_test: a virtual screen, xwd,
  # xprop, convert, keys, and a window manager (on X11 it is what makes a window fullscreen)
  # optional parts CMake detects (RDMA verbs, FFmpeg codecs, GStreamer plugin, SDL2 display)
  libibverbs-dev librdmacm-dev rdma-core ibverbs-providers
  libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libswresample-dev libavdevice-dev
  libavfilter-dev  # the composite's sound mixed with amix
  libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev libsdl2-dev
  # the OBS plugin: libobs and its frontend API, Qt 5 for its dialog (Debian's OBS is built
  # with Qt 5), and OBS itself for the tests that run it
  libobs-dev qtbase5-dev obs-studio python3-websocket
  # Soft-RoCE lab (tests/rxe): a QEMU VM booting the distribution kernel, which has rdma_rxe
  qemu-system-x86 busybox-static linux-image-amd64 cpio xz-utils
  ibverbs-utils rdmacm-utils perftest iproute2
  # the Windows build (scripts/build-windows.sh): MinGW-w64 with posix threads, GoogleTest's
  # sources, wine to run the result headless, NSIS and 7-Zip to package it
  g++-mingw-w64-x86-64-posix mingw-w64-tools binutils-mingw-w64-x86-64 googletest wine64 nsis
  p7zip-full
)

# GStreamer's CUDA headers (gst/cuda, for rdmasink/rdmasrc's memory:CUDAMemory caps) are in
# libgstreamer-plugins-bad1.0-dev, whose dependencies pull in OpenCV, Qt, GDAL and MPI (about
# 140 packages) for headers nothing here uses. That package alone is unpacked under .deps/;
# its library comes with gstreamer1.0-plugins-bad. Done after the packages are in (below).
unpack_gst_cuda_headers() {
  local dir=.deps/gstreamer-cuda
  [ -f "$dir/usr/include/gstreamer-1.0/gst/cuda/gstcudamemory.h" ] && return 0
  dpkg-query -W -f='${Status}' libgstreamer-plugins-bad1.0-dev 2>/dev/null | grep -q "install ok installed" &&
    return 0
  local tmp
  tmp=$(mktemp -d)
  if (cd "$tmp" && apt-get download -qq libgstreamer-plugins-bad1.0-dev 2>/dev/null); then
    mkdir -p "$dir" && dpkg -x "$tmp"/libgstreamer-plugins-bad1.0-dev_*.deb "$dir"
  else
    echo "setup: could not download libgstreamer-plugins-bad1.0-dev: no memory:CUDAMemory caps" >&2
  fi
  rm -rf "$tmp"
}

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  unpack_gst_cuda_headers
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  sudo=sudo
else
  sudo=
fi
echo "setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
unpack_gst_cuda_headers
