#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Many streams into one receiver, next to their peers, in one run on this machine:

(a) 1, 2 and 4 concurrent 1920x1080 UYVY no-drop streams, unpaced, into one rdmavideo-recv
    over TCP loopback: aggregate GB/s and CPU seconds per GB (every process, both ends), next
    to the same number of parallel plain TCP pipes (bench/tcp_pipe.cpp, the plain pipe of
    run_tcp_bench.py) moving the same bytes. Pipe and rdmavideo runs alternate, --repeat
    times each; the table shows medians with the range. Target: rdmavideo at least 0.85x the
    pipes' aggregate at every N.
(b) Four 1920x1080 yuv422p10le streams recorded as ProRes 422 HQ (prores_aw) by one
    rdmavideo-recv (each sender reads the same raw frames from a file), next to four parallel
    `ffmpeg -c:v prores_aw -profile:v 3` processes encoding the same frames from the file.
    Alternating, --repeat times each. Aggregate encoded fps; target at least 0.9x. Also how
    many 1080p60 ProRes streams this machine records in real time, and the receiver's peak
    RSS against its rings.

Aggregate GB/s is all bytes over the span from the first stream's start to the last one's end
(rdmavideo: the receiver's --stats-json; pipes: each listener's first byte to EOF, combined
the same way). CPU is user + system from os.wait4 of every process. Exits 0 when every case
ran, whatever the numbers; non-zero when one failed. See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import (  # noqa: E402  (the process helpers are shared)
    REPO_ROOT, CaseError, Proc, stop_all, wait_all, wait_for_port_line)

WIDTH, HEIGHT, RATE = 1920, 1080, 60
UYVY_FRAME = WIDTH * HEIGHT * 2
P10_FRAME = WIDTH * HEIGHT * 2 * 2  # yuv422p10le: 2 bytes a sample, 2 samples a pixel
RING = 8


def pipes_case(build, n, frames, work):
    """n parallel plain TCP pipes, each moving `frames` UYVY frames' bytes."""
    exe = str(build / "bench" / "rdmavideo-tcp-pipe")
    total = frames * UYVY_FRAME
    listeners, senders = [], []
    try:
        for i in range(n):
            listeners.append(Proc(f"pipe-l{i}", [exe, "--listen", "0"], work))
        ports = [wait_for_port_line(l) for l in listeners]
        for i, port in enumerate(ports):
            senders.append(Proc(f"pipe-s{i}", [exe, "--connect", f"127.0.0.1:{port}", "--bytes",
                                               str(total)], work))
        wait_all(senders + listeners, 600)
    finally:
        stop_all(listeners + senders)
    got = [json.loads(l.stdout().strip().splitlines()[-1]) for l in listeners]
    if any(g["bytes"] != total for g in got):
        raise CaseError(f"a pipe moved {[g['bytes'] for g in got]} of {total} bytes")
    # Each listener times first byte to EOF; the span runs from the earliest first byte.
    ends = [l.end for l in listeners]
    starts = [e - g["seconds"] for e, g in zip(ends, got)]
    span = max(ends) - min(starts)
    cpu = sum(p.cpu_seconds for p in senders + listeners)
    return {"gbps": n * total / span / 1e9, "cpu_per_gb": cpu / (n * total / 1e9), "span": span}


def rdmavideo_case(build, n, frames, work):
    """n rdmavideo-send --testsrc no-drop streams into one rdmavideo-recv --max-streams n."""
    recv_json = work / "recv.json"
    recv = Proc("recv", [str(build / "receiver" / "rdmavideo-recv"), "--listen", "127.0.0.1:0",
                         "--transport", "tcp", "--max-streams", str(n), "--quiet", "--stats-json",
                         str(recv_json)], work)
    senders = []
    try:
        port = wait_for_port_line(recv)
        for i in range(n):
            senders.append(Proc(f"send{i}", [
                str(build / "sender" / "rdmavideo-send"), "--connect", f"127.0.0.1:{port}",
                "--transport", "tcp", "--testsrc", "-s", f"{WIDTH}x{HEIGHT}", "--pix-fmt",
                "uyvy422", "--no-drop", "--frames", str(frames), "--quiet", "--name", f"s{i + 1}",
                "--stats-json", str(work / f"send{i}.json")], work))
        wait_all(senders + [recv], 600)
    finally:
        stop_all(senders + [recv])
    r = json.loads(recv_json.read_text())
    if r["frames"] != n * frames:
        raise CaseError(f"receiver got {r['frames']} of {n * frames} frames")
    # The senders' stream CPU (their own stats, which leave out rendering the test pattern)
    # and the receiver's whole process.
    send_cpu = sum(json.loads((work / f"send{i}.json").read_text())["cpu_seconds"]
                   for i in range(n))
    cpu = send_cpu + recv.cpu_seconds
    return {"gbps": r["gbytes_per_s"], "cpu_per_gb": cpu / (r["bytes"] / 1e9),
            "span": r["seconds"]}


def prores_rdmavideo(build, raw, frames, work):
    """Four senders reading the raw file, one receiver recording each as ProRes HQ."""
    recv = Proc("prores-recv", [str(build / "receiver" / "rdmavideo-recv"), "--listen",
                                "127.0.0.1:0", "--transport", "tcp", "--max-streams", "4",
                                "--quiet", "--output", str(work / "{name}.mov"), "--stats-json",
                                str(work / "prores.json")], work)
    senders = []
    try:
        port = wait_for_port_line(recv)
        start = time.monotonic()
        for i in range(4):
            senders.append(Proc(f"prores-send{i}", [
                str(build / "sender" / "rdmavideo-send"), "--connect", f"127.0.0.1:{port}",
                "--transport", "tcp", "-i", "-", "-s", f"{WIDTH}x{HEIGHT}", "--pix-fmt",
                "yuv422p10le", "-r", str(RATE), "--quiet", "--name", f"cam{i + 1}"], work,
                stdin=raw))
        wait_all(senders + [recv], 900)
    finally:
        stop_all(senders + [recv])
    wall = recv.end - start
    recorded = [int(m) for m in re.findall(r"recorded (\d+) frames", recv.stderr())]
    if sorted(recorded) != [frames] * 4:
        raise CaseError(f"receiver recorded {recorded}, wanted {frames} each")
    cpu = recv.cpu_seconds + sum(p.cpu_seconds for p in senders)
    return {"fps": 4 * frames / wall, "wall": wall, "cpu": cpu, "maxrss_mb": recv.maxrss_kb / 1024}


def prores_ffmpeg(raw, frames, work):
    procs = []
    try:
        start = time.monotonic()
        for i in range(4):
            procs.append(Proc(f"ffmpeg{i}", [
                "ffmpeg", "-nostdin", "-v", "error", "-f", "rawvideo", "-pix_fmt", "yuv422p10le",
                "-s", f"{WIDTH}x{HEIGHT}", "-r", str(RATE), "-i", str(raw), "-c:v", "prores_aw",
                "-profile:v", "3", "-y", str(work / f"ffmpeg{i}.mov")], work))
        wait_all(procs, 900)
    finally:
        stop_all(procs)
    wall = max(p.end for p in procs) - start
    return {"fps": 4 * frames / wall, "wall": wall, "cpu": sum(p.cpu_seconds for p in procs),
            "maxrss_mb": max(p.maxrss_kb for p in procs) / 1024}


def fmt_range(values, spec):
    if len(values) == 1:
        return format(values[0], spec)
    return (f"{format(statistics.median(values), spec)} "
            f"({format(min(values), spec)}-{format(max(values), spec)})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", type=Path, default=REPO_ROOT / "build")
    parser.add_argument("--frames", type=int, default=600,
                        help="frames per stream in (a) (default 600)")
    parser.add_argument("--prores-frames", type=int, default=240,
                        help="frames per stream in (b) (default 240)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs of each (a) case, alternating pipe and rdmavideo (default 3)")
    parser.add_argument("--streams", default="1,2,4", help="stream counts for (a)")
    parser.add_argument("--quick", action="store_true",
                        help="CI smoke: 60 frames, 24 ProRes frames, one run each")
    parser.add_argument("--json", type=Path, help="write every result to FILE as JSON")
    args = parser.parse_args()
    if args.quick:
        args.frames, args.prores_frames, args.repeat = 60, 24, 1
    counts = [int(n) for n in args.streams.split(",")]

    failed = False
    results = {"throughput": {}, "prores": {}}
    with tempfile.TemporaryDirectory(prefix="rdmavideo-multistream-bench-") as tmp:
        work = Path(tmp)
        # (a)
        for n in counts:
            runs = {"pipes": [], "rdmavideo": []}
            for i in range(args.repeat):
                for kind, case in (("pipes", pipes_case), ("rdmavideo", rdmavideo_case)):
                    d = work / f"a-{n}-{kind}-{i}"
                    d.mkdir()
                    try:
                        runs[kind].append(case(args.build_dir, n, args.frames, d))
                    except CaseError as e:
                        failed = True
                        print(f"(a) {n} x {kind}: {e}", file=sys.stderr)
            results["throughput"][n] = runs
        # (b)
        raw = work / "frames.yuv"
        subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i",
                        f"testsrc2=size={WIDTH}x{HEIGHT}:rate={RATE}", "-frames:v",
                        str(args.prores_frames), "-pix_fmt", "yuv422p10le", "-f", "rawvideo",
                        "-y", str(raw)], check=True)
        results["prores"] = {"rdmavideo": [], "ffmpeg": []}
        for i in range(args.repeat):
            for kind, case in (("rdmavideo", lambda d: prores_rdmavideo(args.build_dir, raw,
                                                                        args.prores_frames, d)),
                               ("ffmpeg", lambda d: prores_ffmpeg(raw, args.prores_frames, d))):
                d = work / f"b-{kind}-{i}"
                d.mkdir()
                try:
                    results["prores"][kind].append(case(d))
                except CaseError as e:
                    failed = True
                    print(f"(b) {kind}: {e}", file=sys.stderr)

    print(f"(a) {WIDTH}x{HEIGHT} UYVY, {args.frames} frames a stream, no-drop over TCP loopback, "
          f"median of {args.repeat} (range), {os.cpu_count()} CPUs")
    print(f"{'streams':>7}  {'case':28} {'GB/s':>20} {'CPU s/GB':>20} {'vs pipes':>8}")
    verdicts = []
    for n, runs in results["throughput"].items():
        pipe_gbps = [r["gbps"] for r in runs["pipes"]]
        ours_gbps = [r["gbps"] for r in runs["rdmavideo"]]
        for kind, label in (("pipes", f"{n} plain TCP pipe{'s' if n > 1 else ''} (4 MiB)"),
                            ("rdmavideo", f"rdmavideo, {n} stream{'s' if n > 1 else ''}")):
            rs = runs[kind]
            if not rs:
                print(f"{n:>7}  {label:28} {'failed':>20}")
                continue
            ratio = ""
            if kind == "rdmavideo" and pipe_gbps:
                ratio = f"{statistics.median(ours_gbps) / statistics.median(pipe_gbps):.2f}x"
            print(f"{n:>7}  {label:28} {fmt_range([r['gbps'] for r in rs], '.2f'):>20} "
                  f"{fmt_range([r['cpu_per_gb'] for r in rs], '.3f'):>20} {ratio:>8}")
        if pipe_gbps and ours_gbps:
            r = statistics.median(ours_gbps) / statistics.median(pipe_gbps)
            verdicts.append(f"(a) {n} stream(s): {r:.2f}x the pipes "
                            f"({'PASS' if r >= 0.85 else 'FAIL'}, target >= 0.85x)")
    print()
    def median_run(runs):  # the run with the median fps, for its wall, CPU and RSS
        return sorted(runs, key=lambda r: r["fps"])[len(runs) // 2] if runs else None

    ours_runs, peer_runs = results["prores"]["rdmavideo"], results["prores"]["ffmpeg"]
    ours, peer = median_run(ours_runs), median_run(peer_runs)
    print(f"(b) four {WIDTH}x{HEIGHT} yuv422p10le streams, ProRes 422 HQ (prores_aw), "
          f"{args.prores_frames} frames each, median of {args.repeat} (range)")
    print(f"{'case':44} {'fps (all 4)':>20} {'wall s':>7} {'CPU s':>7} {'peak RSS MB':>11}")
    if ours:
        print(f"{'rdmavideo-recv --max-streams 4, 4 senders':44} "
              f"{fmt_range([r['fps'] for r in ours_runs], '.1f'):>20} "
              f"{ours['wall']:7.2f} {ours['cpu']:7.2f} {ours['maxrss_mb']:11.0f}")
    if peer:
        print(f"{'4 x ffmpeg -c:v prores_aw -profile:v 3':44} "
              f"{fmt_range([r['fps'] for r in peer_runs], '.1f'):>20} "
              f"{peer['wall']:7.2f} {peer['cpu']:7.2f} {peer['maxrss_mb']:11.0f} (each)")
    if ours and peer:
        r = ours["fps"] / peer["fps"]
        verdicts.append(f"(b) ProRes, 4 streams: {r:.2f}x four ffmpeg processes "
                        f"({'PASS' if r >= 0.9 else 'FAIL'}, target >= 0.9x)")
    if ours:
        rings_mb = 4 * RING * (P10_FRAME + 4095) // 4096 * 4096 / 2**20
        realtime = int(ours["fps"] // RATE)
        verdicts.append(f"records {realtime} stream(s) of 1080p60 ProRes HQ in real time here "
                        f"({ours['fps']:.1f} fps encoded in all, {RATE} needed per stream)")
        verdicts.append(f"receiver peak RSS {ours['maxrss_mb']:.0f} MB with four streams: rings "
                        f"{rings_mb:.0f} MB (4 x {RING} slots of {P10_FRAME / 2**20:.1f} MiB), "
                        f"encoders, frames in their queues and the program "
                        f"{ours['maxrss_mb'] - rings_mb:.0f} MB")
    print()
    for v in verdicts:
        print(v)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
