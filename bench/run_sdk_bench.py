#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The SDK's senders against the project's own: 3840x2160 RGBA frames as fast as the
receiver takes them, over TCP on 127.0.0.1, into rdmavideo-recv, in one run:

- rdmavideo-send --testsrc (the command-line sender, pre-rendered pattern)
- the C example (examples/c_sender, -1: each pool buffer drawn once, then sent as it is)
- the Python example lending pool buffers (examples/python/sender.py --once: zero copy)
- the Python example sending numpy frames (--copy --once: send(), one copy in the library)

GB/s is the receiver's (its stats JSON); CPU a frame is the sender's whole process (user +
system, from os.wait4, setup included) over the frames sent. The targets: the C example within
5% of rdmavideo-send in GB/s and CPU a frame, and the zero-copy Python sender at least 0.9x
the C example's GB/s. Exits 0 when every case ran, whatever the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import (  # noqa: E402
    REPO_ROOT, CaseError, Proc, text_table, wait_for_port_line, wait_idle)

WIDTH, HEIGHT = 3840, 2160
FRAME_BYTES = WIDTH * HEIGHT * 4
DEBIAN_PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def senders(build: Path, frames: int, to: str) -> dict[str, list[str]]:
    examples = REPO_ROOT / "examples"
    py = [DEBIAN_PYTHON, str(examples / "python" / "sender.py"), "-n", str(frames), "-s",
          f"{WIDTH}x{HEIGHT}", "--once"]
    return {
        "rdmavideo-send --testsrc": [str(build / "sender" / "rdmavideo-send"), "--connect", to,
                                     "--testsrc", "-s", f"{WIDTH}x{HEIGHT}", "--pix-fmt", "rgba",
                                     "--no-drop", "--checksum", "--tone", "1000",
                                     "--frames", str(frames), "--quiet"],
        "C example (lent buffers)": [str(build / "bench" / "rdmavideo-example-sender"), "-1",
                                     "-n", str(frames), "-s", f"{WIDTH}x{HEIGHT}", to],
        "Python, lent buffers": py + [to],
        "Python, numpy send()": py + ["--copy", to],
    }


def run(build: Path, case: str, frames: int, work: Path) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    stats = work / "recv.json"
    procs = []
    try:
        recv = Proc("rdmavideo-recv", [str(build / "receiver" / "rdmavideo-recv"), "--listen",
                                       "127.0.0.1:0", "--quiet", "--stats-json", str(stats)], work)
        procs.append(recv)
        port = wait_for_port_line(recv)
        argv = senders(build, frames, f"127.0.0.1:{port}")[case]
        send = Proc("sender", argv, work)
        procs.append(send)
        deadline = time.monotonic() + 120
        send.wait(deadline)
        recv.wait(deadline)
        send.check()
        recv.check()
        rs = json.loads(stats.read_text())
        if rs["frames"] != frames:
            raise CaseError(f"{case}: the receiver got {rs['frames']} of {frames} frames")
        return {"gbps": rs["bytes"] / rs["seconds"] / 1e9,
                "cpu_ms_per_frame": send.cpu_seconds * 1e3 / frames}
    finally:
        for p in procs:
            p.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", default=str(REPO_ROOT / "build"))
    ap.add_argument("--frames", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="60 frames, one run of each")
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.quick:
        a.frames, a.repeat = 60, 1
    build = Path(a.build_dir)
    env_lib = build / "sdk" / "librdmavideo.so.0"
    os.environ.setdefault("RDMAVIDEO_LIBRARY", str(env_lib))
    os.environ["PYTHONPATH"] = str(REPO_ROOT / "python") + os.pathsep + os.environ.get(
        "PYTHONPATH", "")
    cases = list(senders(build, a.frames, "x").keys())
    results: dict[str, list[dict]] = {c: [] for c in cases}
    failed = []
    with tempfile.TemporaryDirectory(prefix="rdmavideo-sdk-bench-") as tmp:
        for k in range(a.repeat):  # alternating, so a slow spell costs every case alike
            for i, case in enumerate(cases):
                wait_idle(5.0)
                try:
                    results[case].append(run(build, case, a.frames, Path(tmp) / f"{k}-{i}"))
                except (CaseError, OSError, ValueError, KeyError) as e:
                    failed.append(f"{case}: {e}")
    rows, summary = [], {}
    for case in cases:
        runs = results[case]
        if not runs:
            rows.append([case, "failed", "", ""])
            continue
        gbps = statistics.median(r["gbps"] for r in runs)
        cpu = statistics.median(r["cpu_ms_per_frame"] for r in runs)
        summary[case] = {"gbps": gbps, "cpu_ms_per_frame": cpu, "runs": runs}
        low, high = min(r["gbps"] for r in runs), max(r["gbps"] for r in runs)
        rows.append([case, f"{gbps:.2f}", f"{cpu:.2f}",
                     f"median of {len(runs)} ({low:.2f}-{high:.2f} GB/s)" if len(runs) > 1 else ""])
    print(f"3840x2160 RGBA ({FRAME_BYTES / 1e6:.1f} MB a frame), {a.frames} frames a run, "
          "TCP on 127.0.0.1, into rdmavideo-recv")
    print(text_table(["sender", "GB/s", "CPU ms/frame", "note"], rows, {1, 2}))
    cli, c, py, py_copy = (summary.get(x) for x in cases)
    verdicts = []
    if cli and c:
        verdicts.append(("C example within 5% of rdmavideo-send in GB/s",
                         c["gbps"] >= 0.95 * cli["gbps"], f"{c['gbps'] / cli['gbps']:.2f}x"))
        verdicts.append(("C example's CPU a frame within 5% of rdmavideo-send's",
                         c["cpu_ms_per_frame"] <= 1.05 * cli["cpu_ms_per_frame"],
                         f"{c['cpu_ms_per_frame'] / cli['cpu_ms_per_frame']:.2f}x"))
    if c and py:
        verdicts.append(("Python (lent buffers) at least 0.9x the C example's GB/s",
                         py["gbps"] >= 0.9 * c["gbps"], f"{py['gbps'] / c['gbps']:.2f}x"))
    if c and py_copy:
        verdicts.append(("Python (numpy send(), one copy) against the C example (no target)",
                         True, f"{py_copy['gbps'] / c['gbps']:.2f}x"))
    print()
    for what, ok, ratio in verdicts:
        print(f"{'met    ' if ok else 'NOT met'}  {what}: {ratio}")
    for f in failed:
        print(f"failed: {f}")
    if a.json:
        Path(a.json).write_text(json.dumps({"frames": a.frames, "results": summary,
                                            "failed": failed}, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
