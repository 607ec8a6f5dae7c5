#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Soak: a receiver left running with four 1920x1080 UYVY 60 fps --realtime streams (the
OBS-to-recorder shape, without the encoder) over TCP loopback for --minutes (default 10),
with shared-key authentication, --max-memory and --metrics as a service would run it.

Every --every seconds it samples the receiver's resident memory (VmRSS) and open descriptors
(/proc/PID/fd), and each stream's frames and drops from --metrics; it prints a row each time
and, at the end, the start and end figures side by side with the verdict: RSS within 10% (or
8 MiB) of where it stood after the first minute, descriptors unchanged, every stream still
up. A fresh sender joins and leaves every --churn seconds besides, so connection setup and
teardown are soaked too. Not a CTest test: it takes minutes. Exit 0 when the verdict holds.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def scrape(port: int) -> dict[str, tuple[float, float, float]]:
    """stream name -> (frames, dropped, up) of the streams running."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    out: dict[str, list[float]] = {}
    for line in text.splitlines():
        m = re.match(r'rdmavideo_stream_(frames_total|dropped_frames_total|up)\{stream="(\d+)",'
                     r'name="([^"]*)".*\} (\S+)$', line)
        if not m:
            continue
        key = f"{m.group(3)}#{m.group(2)}"
        row = out.setdefault(key, [0.0, 0.0, 0.0])
        row[["frames_total", "dropped_frames_total", "up"].index(m.group(1))] = float(m.group(4))
    return {k: (v[0], v[1], v[2]) for k, v in out.items() if v[2] == 1}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default=str(REPO_ROOT / "build"))
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--every", type=float, default=30, help="seconds between samples")
    ap.add_argument("--churn", type=float, default=20, help="seconds between short extra senders")
    args = ap.parse_args()
    build = Path(args.build_dir)
    recv_bin, send_bin = build / "receiver/rdmavideo-recv", build / "sender/rdmavideo-send"
    doctor = build / "doctor/rdmavideo-doctor"
    work = Path(tempfile.mkdtemp(prefix="rdmavideo-soak-"))
    key = work / "shared.key"
    if doctor.exists():
        subprocess.run([doctor, "--new-key", key], check=True, stdout=subprocess.DEVNULL)
    else:
        key.write_text(os.urandom(32).hex())
        key.chmod(0o600)

    recv_log = open(work / "recv.log", "w")
    recv = subprocess.Popen([recv_bin, "--listen", "127.0.0.1:0", "--transport", "tcp",
                             "--max-streams", "5", "--serve", "--quiet", "--key-file", key,
                             "--max-memory", "1G", "--metrics", "127.0.0.1:0"], stderr=recv_log)
    port = metrics = None
    for _ in range(300):
        text = (work / "recv.log").read_text()
        p = re.search(r"listening on 127\.0\.0\.1:(\d+)", text)
        m = re.search(r"metrics at http://127\.0\.0\.1:(\d+)", text)
        if p and m:
            port, metrics = int(p.group(1)), int(m.group(1))
            break
        time.sleep(0.1)
    if not port:
        print((work / "recv.log").read_text(), file=sys.stderr)
        return 1

    def sender(name: str, extra: list[str]) -> subprocess.Popen:
        return subprocess.Popen([send_bin, "--connect", f"127.0.0.1:{port}", "--transport", "tcp",
                                 "--key-file", key, "--testsrc", "-s", "1920x1080", "-r", "60",
                                 "--pix-fmt", "uyvy422", "--realtime", "--quiet", "--name", name,
                                 *extra], stderr=subprocess.DEVNULL)

    cams = [sender(f"cam{i}", []) for i in range(1, 5)]
    print(f"soak: 4 x 1920x1080 UYVY 60 fps --realtime over TCP loopback for {args.minutes:g} "
          f"min; a short extra stream every {args.churn:g} s; receiver pid {recv.pid}")
    print(f"{'t (s)':>6} {'RSS MiB':>8} {'fds':>5} {'streams':>7} {'fps (all)':>10} {'dropped':>8}")
    start = time.time()
    end = start + args.minutes * 60
    samples = []
    last_frames, last_t = 0.0, start
    next_churn, churned = start + args.churn, 0
    failures = []
    while True:
        now = time.time()
        if now >= next_churn and now < end - 5:
            extra = sender(f"churn{churned}", ["--frames", "30"])
            churned += 1
            next_churn = now + args.churn
            try:
                extra.wait(20)
            except subprocess.TimeoutExpired:
                extra.kill()
                failures.append(f"extra sender {churned} hung")
        # Descriptors first: the scrape's own HTTP connection would be one more.
        nfd_now, rss_now = fds(recv.pid), rss_mib(recv.pid)
        streams = scrape(metrics)
        cams_up = {k: v for k, v in streams.items() if k.startswith("cam")}
        frames = sum(v[0] for v in cams_up.values())
        dropped = sum(v[1] for v in cams_up.values())
        fps = (frames - last_frames) / max(now - last_t, 1e-3)
        last_frames, last_t = frames, now
        samples.append((now - start, rss_now, nfd_now, len(cams_up), fps, dropped))
        t, rss, nfd, n, f, d = samples[-1]
        print(f"{t:6.0f} {rss:8.1f} {nfd:5d} {n:7d} {f:10.1f} {d:8.0f}", flush=True)
        if now >= end:
            break
        time.sleep(min(args.every, max(end - time.time(), 0)))

    for cam in cams:
        cam.send_signal(2)
    for cam in cams:
        if cam.wait(30) != 0:
            failures.append(f"a camera sender exited {cam.returncode}")
    recv.send_signal(15)
    code = recv.wait(60)

    # After the first minute the rings and buffers are in place: growth is measured from there.
    warm = next((s for s in samples if s[0] >= 60), samples[0])
    last = samples[-1]
    print()
    print(f"{'':12} {'t (s)':>6} {'RSS MiB':>8} {'fds':>5} {'streams':>7}")
    print(f"{'start':12} {samples[0][0]:6.0f} {samples[0][1]:8.1f} {samples[0][2]:5d} {samples[0][3]:7d}")
    print(f"{'after 1 min':12} {warm[0]:6.0f} {warm[1]:8.1f} {warm[2]:5d} {warm[3]:7d}")
    print(f"{'end':12} {last[0]:6.0f} {last[1]:8.1f} {last[2]:5d} {last[3]:7d}")
    print(f"extra streams that joined and left: {churned}; receiver exit code {code}")
    if last[1] > warm[1] * 1.10 and last[1] > warm[1] + 8:
        failures.append(f"RSS grew from {warm[1]:.1f} to {last[1]:.1f} MiB")
    if last[2] != warm[2]:
        failures.append(f"descriptors went from {warm[2]} to {last[2]}")
    if last[3] != 4:
        failures.append(f"{last[3]} of 4 camera streams up at the end")
    if code != 0:
        failures.append(f"the receiver exited {code}")
    print("soak:", "PASS" if not failures else "FAIL: " + "; ".join(failures))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
