#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Windows sender (rdmavideo-send.exe, cross-built with MinGW-w64, run under wine) against
the Linux sender on the same machine, into the same Linux receiver over 127.0.0.1: the test
pattern at 1920x1080 UYVY, live at 60 fps (paced by the sender) and as fast as the receiver
takes it. Prints one table: frames, fps and GB/s as the receiver counted them, frames dropped,
and the sender's CPU per frame (user + system of its whole process from os.wait4; under wine
also the CPU wine's server spent meanwhile, from /proc, which a Windows program would not
need). Every number for the .exe is "under wine", not Windows. Medians of --runs runs.

  run_windows_bench.py [--build-dir build] [--windows-build-dir build-windows] [--runs 3]
                       [--seconds 10] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import (  # noqa: E402
    REPO_ROOT, CaseDirs, CaseError, Proc, proc_cpu_seconds, text_table, wait_for_port_line)

SIZE, RATE = "1920x1080", 60
FRAME_BYTES = 1920 * 1080 * 2


def wineserver_pid(prefix: Path) -> int | None:
    """The wine server of `prefix`, if one runs (its WINEPREFIX in /proc/PID/environ)."""
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if not (d / "comm").read_text().strip().startswith("wineserver"):
                continue
            env = (d / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"WINEPREFIX={prefix}".encode() in env:
            return int(d.name)
    return None


def run_case(dirs: CaseDirs, sender: list[str], live: bool, seconds: float, prefix: Path,
             recv_bin: Path, tag: str) -> dict:
    work = dirs.new(tag)
    stats = work / "recv.json"
    recv = Proc("recv", [str(recv_bin), "--listen", "127.0.0.1:0", "--quiet", "--stats-json",
                         str(stats)], work)
    try:
        port = wait_for_port_line(recv, 30)
        args = sender + ["--connect", f"127.0.0.1:{port}", "--transport", "tcp", "--testsrc",
                         "-s", SIZE, "-r", str(RATE), "--quiet"]
        args += ["--realtime", "--duration", str(seconds)] if live else \
            ["--frames", str(int(seconds * 200))]
        server = wineserver_pid(prefix) if "wine" in sender[0] else None
        server_before = proc_cpu_seconds(server) if server else 0.0
        send = Proc("send", args, work)
        send.wait(time.monotonic() + seconds * 10 + 60)
        send.check()
        server_cpu = proc_cpu_seconds(server) - server_before if server else 0.0
        recv.wait(time.monotonic() + 30)
        recv.check()
    finally:
        recv.stop()
    r = json.loads(stats.read_text())
    frames = r["frames"]
    return {"frames": frames, "fps": r["fps"], "gbps": r["gbytes_per_s"],
            "dropped": r["dropped"], "cpu_ms": 1000 * (send.cpu_seconds + server_cpu) / frames,
            "server_ms": 1000 * server_cpu / frames}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build-dir", default=str(REPO_ROOT / "build"))
    p.add_argument("--windows-build-dir", default=str(REPO_ROOT / "build-windows"))
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--quick", action="store_true", help="one run of 2 s each")
    a = p.parse_args()
    if a.quick:
        a.runs, a.seconds = 1, 2
    build, wbuild = Path(a.build_dir).resolve(), Path(a.windows_build_dir).resolve()
    recv_bin = build / "receiver" / "rdmavideo-recv"
    linux_send = build / "sender" / "rdmavideo-send"
    exe = wbuild / "sender" / "rdmavideo-send.exe"
    for f in (recv_bin, linux_send, exe):
        if not f.exists():
            print(f"run_windows_bench.py: {f} is not built", file=sys.stderr)
            return 2
    prefix = wbuild / "wine"
    os.environ["WINEPREFIX"] = str(prefix)
    wine = str(REPO_ROOT / "scripts" / "wine-run.sh")
    # wine's server kept running across the cases, as on a machine where wine is in use: its
    # start-up is no sender's cost.
    # A server already running would keep its own idle timeout: it is stopped first.
    subprocess.run([wine, "--server", "-k"], stderr=subprocess.DEVNULL, check=False)
    subprocess.Popen([wine, "--server", "-p"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    subprocess.run([wine, "cmd", "/c", "exit"], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)
    senders = [("Linux rdmavideo-send", [str(linux_send)]),
               ("rdmavideo-send.exe under wine", [wine, str(exe)])]
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="rdmavideo-windows-bench-") as tmp:
            dirs = CaseDirs(Path(tmp))
            for live in (True, False):
                for label, argv in senders:
                    runs = [run_case(dirs, argv, live, a.seconds, prefix, recv_bin,
                                     f"{'live' if live else 'fast'}-{len(rows)}-{i}")
                            for i in range(a.runs)]
                    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
                    rows.append([f"1080p60 {'live' if live else 'as fast as possible'}", label,
                                 f"{med['frames']:.0f}", f"{med['fps']:.1f}",
                                 f"{med['gbps']:.3f}", f"{med['dropped']:.0f}",
                                 f"{med['cpu_ms']:.2f}",
                                 f"{med['server_ms']:.2f}" if "wine" in argv[0] else "-"])
    except CaseError as e:
        print(f"run_windows_bench.py: {e}", file=sys.stderr)
        return 1
    finally:
        subprocess.run([wine, "--server", "-k"], check=False)
    print(f"{SIZE} UYVY test pattern over TCP 127.0.0.1 into rdmavideo-recv, median of "
          f"{a.runs} run(s) of {a.seconds:g} s (as fast as possible: {int(a.seconds * 200)} "
          f"frames); CPU per frame is the sender's, with wine's server's share beside it")
    print(text_table(["case", "sender", "frames", "fps", "GB/s", "dropped", "CPU ms/frame",
                      "of it wineserver"], rows, right={2, 3, 4, 5, 6, 7}, rules_before={2}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
