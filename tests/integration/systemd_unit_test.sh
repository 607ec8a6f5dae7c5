#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# configs/rdmavideo-recv.service is a unit systemd accepts (systemd-analyze verify), pointing
# at this build's rdmavideo-recv, and the receiver accepts the command line it runs, with the
# preset it names and a key the way LoadCredential= hands it over (a private copy). Skips
# (77) where systemd-analyze is missing.
set -euo pipefail
recv_bin=$1
source_dir=$2
command -v systemd-analyze >/dev/null || { echo "systemd-analyze not installed"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sed "s|/usr/local/bin/rdmavideo-recv|$recv_bin|" "$source_dir/configs/rdmavideo-recv.service" \
  >"$work/rdmavideo-recv.service"
systemd-analyze verify "$work/rdmavideo-recv.service"

# The ExecStart line, with the credential directory and the config file made real, and a
# free port instead of the preset's 5000.
mkdir -m 0700 "$work/credentials"
(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/credentials/key")
sed 's|^listen = .*|listen = "127.0.0.1:0"|' "$source_dir/configs/obs-prores-recv.toml" >"$work/recv.toml"
exec_start=$(sed -n '/^ExecStart=/,/[^\\]$/p' "$work/rdmavideo-recv.service" | sed 's/^ExecStart=//; s/\\$//' | tr -d '\n')
exec_start=${exec_start//\/etc\/rdmavideo\/recv.toml/$work/recv.toml}
exec_start=${exec_start//\$\{CREDENTIALS_DIRECTORY\}/$work/credentials}
exec_start=${exec_start//127.0.0.1:9464/127.0.0.1:0}
cd "$work"
# shellcheck disable=SC2086
$exec_start 2>"$work/recv.log" &
pid=$!
for _ in $(seq 100); do
  grep -q "metrics at http" "$work/recv.log" && break
  sleep 0.1
done
kill -TERM $pid
wait $pid || { echo "the receiver failed:"; cat "$work/recv.log"; exit 1; }
grep -q "senders must prove the key" "$work/recv.log" || { cat "$work/recv.log"; exit 1; }
grep -q "serving until stopped" "$work/recv.log" || { cat "$work/recv.log"; exit 1; }
echo "unit verified; its command line serves with a key and metrics"
