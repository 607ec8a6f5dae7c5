#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ProRes 422 HQ encode rate of rdmavideo-recv receiving 1920x1080 yuv422p10le frames over
TCP loopback, next to ffmpeg encoding the same raw frames from a file with prores_ks
(-profile:v 3) and prores_aw, in the same run. Prints one table and whether this machine
records 1080p60 ProRes HQ in real time.

fps is frames / wall seconds of the whole run: for rdmavideo from starting the sender (the
receiver already listening) to the receiver's exit with the file finalised; for ffmpeg the
process's wall time. CPU seconds are user + system from os.wait4. Exits 0 when every case
ran, whatever the numbers.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import REPO_ROOT, CaseError, Proc, stop_all, wait_for_port_line  # noqa: E402


def ffmpeg_case(raw, size, rate, encoder, out, frames):
    argv = ["ffmpeg", "-nostdin", "-v", "error", "-f", "rawvideo", "-pix_fmt", "yuv422p10le",
            "-s", size, "-r", str(rate), "-i", str(raw), "-c:v", encoder, "-profile:v", "3",
            "-y", str(out)]
    proc = Proc(f"ffmpeg-{encoder}", argv, out.parent)
    proc.wait(time.monotonic() + 600)
    if proc.exit_code != 0:
        raise CaseError(f"{' '.join(argv)} exited {proc.exit_code}")
    wall = proc.end - proc.start
    return frames / wall, wall, proc.cpu_seconds


def rdmavideo_case(build, raw, size, rate, encoder, out, frames, workdir):
    recv = Proc(f"recv-{encoder}", [
        str(build / "receiver" / "rdmavideo-recv"), "--listen", "127.0.0.1:0", "--transport",
        "tcp", "--output", str(out), "--encoder", encoder, "--quiet"], workdir)
    procs = [recv]
    try:
        port = wait_for_port_line(recv)
        send = Proc(f"send-{encoder}", [
            str(build / "sender" / "rdmavideo-send"), "--connect", f"127.0.0.1:{port}",
            "--transport", "tcp", "-i", "-", "-s", size, "--pix-fmt", "yuv422p10le", "-r",
            str(rate), "--quiet"], workdir, stdin=raw)
        procs.append(send)
        send.wait(time.monotonic() + 600)
        send.check()
        recv.wait(time.monotonic() + 600)
        recv.check()
    finally:
        stop_all(procs)
    wall = recv.end - send.start
    text = recv.stderr()
    m = re.search(r"recorded (\d+) frames", text)
    if not m or int(m.group(1)) != frames:
        raise CaseError(f"receiver recorded {m.group(1) if m else '?'} of {frames}: {text}")
    return frames / wall, wall, recv.cpu_seconds + send.cpu_seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, default=REPO_ROOT / "build")
    parser.add_argument("--frames", type=int, default=240)
    parser.add_argument("--size", default="1920x1080")
    parser.add_argument("--rate", type=int, default=60)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="rdmavideo-prores-bench-") as tmp:
        work = Path(tmp)
        raw = work / "frames.yuv"
        make = ["ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i",
                f"testsrc2=size={args.size}:rate={args.rate}", "-frames:v", str(args.frames),
                "-pix_fmt", "yuv422p10le", "-f", "rawvideo", "-y", str(raw)]
        subprocess.run(make, check=True)
        rows = []
        failed = False
        cases = [
            ("rdmavideo-recv prores_aw (default)",
             lambda: rdmavideo_case(args.build, raw, args.size, args.rate, "prores_aw",
                                    work / "r_aw.mov", args.frames, work)),
            ("rdmavideo-recv --encoder prores_ks",
             lambda: rdmavideo_case(args.build, raw, args.size, args.rate, "prores_ks",
                                    work / "r_ks.mov", args.frames, work)),
            ("ffmpeg -c:v prores_ks -profile:v 3",
             lambda: ffmpeg_case(raw, args.size, args.rate, "prores_ks", work / "f_ks.mov",
                                 args.frames)),
            ("ffmpeg -c:v prores_aw -profile:v 3",
             lambda: ffmpeg_case(raw, args.size, args.rate, "prores_aw", work / "f_aw.mov",
                                 args.frames)),
        ]
        results = {}
        for label, case in cases:
            try:
                fps, wall, cpu = case()
                results[label] = fps
                rows.append((label, f"{fps:7.1f}", f"{wall:6.2f}", f"{cpu:6.2f}"))
            except Exception as e:  # report and go on with the other cases
                failed = True
                rows.append((label, "failed", "-", "-"))
                print(f"{label}: {e}", file=sys.stderr)

    print(f"ProRes 422 HQ, {args.frames} frames {args.size} yuv422p10le, "
          f"{os.cpu_count()} CPUs")
    print(f"{'case':40} {'fps':>7} {'wall s':>7} {'cpu s':>7}")
    for label, fps, wall, cpu in rows:
        print(f"{label:40} {fps:>7} {wall:>7} {cpu:>7}")
    ours = results.get("rdmavideo-recv prores_aw (default)")
    ks_ours = results.get("rdmavideo-recv --encoder prores_ks")
    ks_ffmpeg = results.get("ffmpeg -c:v prores_ks -profile:v 3")
    aw_ffmpeg = results.get("ffmpeg -c:v prores_aw -profile:v 3")
    if ours and ks_ffmpeg:
        print(f"rdmavideo (prores_aw) / ffmpeg prores_ks: {ours / ks_ffmpeg:.2f}x "
              f"(target >= 0.95x)")
    if ks_ours and ks_ffmpeg:
        print(f"rdmavideo (prores_ks) / ffmpeg prores_ks: {ks_ours / ks_ffmpeg:.2f}x")
    if ours and aw_ffmpeg:
        print(f"rdmavideo (prores_aw) / ffmpeg prores_aw: {ours / aw_ffmpeg:.2f}x")
    if ours:
        verdict = "yes" if ours >= args.rate else "no"
        print(f"records {args.size}@{args.rate} ProRes HQ in real time here: {verdict} "
              f"({ours:.1f} fps against {args.rate} needed)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
