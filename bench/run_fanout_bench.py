#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Fan-out and the sender core, measured over TCP loopback with runs alternating in one go and
medians of --repeat (at least 5):

- fan-out 1 -> 3: rdmavideo-send --connect A --connect B --connect C into three rdmavideo-recv,
  next to its plain peer, rdmavideo-tcp-pipe writing the same bytes to three connections from
  one buffer, a thread each: aggregate GB/s and CPU-s/GB (every process, both ends). Target:
  at least 0.85x the peer's GB/s.
- one stream 1 -> 1 against the same command built from the commit before the sender core
  (--baseline-build DIR): target at least 0.95x its GB/s at no more than 1.1x its CPU-s/GB.

No-drop 1920x1080 UYVY test pattern, --frames per run. Prints one table and the verdicts;
exits 0 when every case ran (whatever the numbers), non-zero when one failed to run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import REPO_ROOT, CaseError, Proc, wait_for_port_line, wait_idle  # noqa: E402

WIDTH, HEIGHT = 1920, 1080
FRAME_BYTES = WIDTH * HEIGHT * 2


def receivers(build: Path, work: Path, tag: str, count: int) -> tuple[list[Proc], list[str]]:
    procs, addresses = [], []
    for i in range(count):
        p = Proc(f"{tag}-recv{i}", [str(build / "receiver/rdmavideo-recv"), "--listen", "127.0.0.1:0",
                                    "--transport", "tcp", "--quiet"], work)
        procs.append(p)
        addresses.append(f"127.0.0.1:{wait_for_port_line(p)}")
    return procs, addresses


def measure(writer: Proc, readers: list[Proc], gbytes: float) -> tuple[float, float]:
    """Waits for a run's writer and its readers: (GB/s over the writer's time, CPU-s/GB of
    every process). A process that failed raises CaseError."""
    deadline = time.monotonic() + 300
    writer.wait(deadline)
    for r in readers:
        r.wait(deadline)
    for p in [writer, *readers]:
        p.check()
    cpu = writer.cpu_seconds + sum(r.cpu_seconds for r in readers)
    return gbytes / (writer.end - writer.start), cpu / gbytes


def rdmavideo_run(build: Path, work: Path, tag: str, count: int, frames: int) -> tuple[float, float]:
    """(GB/s over every receiver, CPU-s/GB of every process) for one run."""
    recv, addresses = receivers(build, work, tag, count)
    argv = [str(build / "sender/rdmavideo-send"), "--testsrc", "-s", f"{WIDTH}x{HEIGHT}",
            "--pix-fmt", "uyvy422", "--frames", str(frames), "--transport", "tcp", "--quiet"]
    for a in addresses:
        argv += ["--connect", a]
    return measure(Proc(f"{tag}-send", argv, work), recv, count * frames * FRAME_BYTES / 1e9)


def pipe_run(build: Path, work: Path, tag: str, count: int, frames: int) -> tuple[float, float]:
    tool = str(build / "bench/rdmavideo-tcp-pipe")
    listeners = [Proc(f"{tag}-listen{i}", [tool, "--listen", "0"], work) for i in range(count)]
    argv = [tool, "--bytes", str(frames * FRAME_BYTES)]
    for p in listeners:
        argv += ["--connect", f"127.0.0.1:{wait_for_port_line(p)}"]
    return measure(Proc(f"{tag}-write", argv, work), listeners, count * frames * FRAME_BYTES / 1e9)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default=str(REPO_ROOT / "build"))
    ap.add_argument("--baseline-build", help="a build dir of the commit before the sender core")
    ap.add_argument("--frames", type=int, default=2000, help="frames a run (1920x1080 UYVY)")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    build = Path(args.build_dir)
    work = Path(tempfile.mkdtemp(prefix="rdmavideo-fanout-"))
    cases = [("fan-out 1->3 rdmavideo", lambda t: rdmavideo_run(build, work, t, 3, args.frames)),
             ("3 TCP writers, one buffer", lambda t: pipe_run(build, work, t, 3, args.frames)),
             ("1->1 rdmavideo (this build)", lambda t: rdmavideo_run(build, work, t, 1, args.frames))]
    if args.baseline_build:
        base = Path(args.baseline_build)
        cases.append(("1->1 rdmavideo (before)", lambda t: rdmavideo_run(base, work, t, 1, args.frames)))
    results: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in cases}
    try:
        for round_ in range(args.repeat):
            for name, run in cases:  # alternating, so drift in the machine hits every case
                wait_idle(10)
                results[name].append(run(f"r{round_}-{len(results[name])}-{name.split()[0]}"))
    except CaseError as e:
        print(f"a case failed to run: {e}", file=sys.stderr)
        return 1
    med = {n: (statistics.median(v[0] for v in r), statistics.median(v[1] for v in r))
           for n, r in results.items()}
    print(f"{args.frames} frames of {WIDTH}x{HEIGHT} UYVY ({FRAME_BYTES / 1e6:.1f} MB) a run, TCP loopback, "
          f"medians of {args.repeat}")
    print(f"{'case':30} {'GB/s':>8} {'CPU-s/GB':>9}   runs (GB/s)")
    for name, (gbps, cpu) in med.items():
        runs = " ".join(f"{g:.2f}" for g, _ in results[name])
        print(f"{name:30} {gbps:8.2f} {cpu:9.3f}   {runs}")
    fan, peer = med["fan-out 1->3 rdmavideo"], med["3 TCP writers, one buffer"]
    print(f"fan-out / peer: {fan[0] / peer[0]:.2f}x GB/s (target >= 0.85x), "
          f"{fan[1] / peer[1]:.2f}x CPU-s/GB")
    if args.baseline_build:
        now, before = med["1->1 rdmavideo (this build)"], med["1->1 rdmavideo (before)"]
        print(f"one stream / before: {now[0] / before[0]:.2f}x GB/s (target >= 0.95x), "
              f"{now[1] / before[1]:.2f}x CPU-s/GB (target <= 1.1x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
