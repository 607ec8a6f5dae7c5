#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Moves 3840x2160 UYVY and RGBA frames over TCP loopback with rdmavideo, FFmpeg and
GStreamer, next to a plain TCP socket pipe moving the same bytes, and prints one table.

Every process runs on 127.0.0.1 with a free port and a timeout. CPU seconds are each
process's user + system time from os.wait4 (both ends summed, whole process). Exits 0 when
every case ran, whatever the numbers; non-zero when a case failed to run. See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import (  # noqa: E402  (the process and result helpers are shared)
    REPO_ROOT, CaseDirs, CaseError, Proc, Result, combine, fakesink_frames, free_port,
    interrupt_on_sigterm, print_verdicts, run_case, text_table, wait_for_port_line, wait_idle,
    wait_listening, warn_if_busy)

WIDTH, HEIGHT = 3840, 2160
RATE = 60  # fps for the real-time cases and the caps


@dataclass(frozen=True)
class Format:
    label: str        # table label
    ffmpeg: str       # FFmpeg / rdmavideo --pix-fmt name
    gst: str          # GStreamer video/x-raw format
    gst_parse: str    # rawvideoparse format nick
    bytes_per_pixel: int

    @property
    def frame_bytes(self) -> int:
        return WIDTH * HEIGHT * self.bytes_per_pixel


FORMATS = [
    Format("UYVY", "uyvy422", "UYVY", "uyvy", 2),
    Format("RGBA", "rgba", "RGBA", "rgba", 4),
]

# Targets from the issue.
TARGET_RATIO = 0.8         # rdmavideo throughput / plain pipe throughput
TARGET_CPU_PER_GB = 0.35   # CPU seconds per GB, both ends
TARGET_FPS_FRACTION = 0.98  # real time: delivered fps at least 98% of 60
TARGET_IPERF_RATIO = 0.95  # rdmavideo throughput / iperf3's (4K RGBA)
TARGET_IPERF_CPU = 1.1     # rdmavideo CPU s/GB / iperf3's


# ---------------------------------------------------------------------------------------------
# Cases


class Bench:
    def __init__(self, args, workdir: Path):
        self.args = args
        self.work = workdir
        build = Path(args.build_dir)
        self.recv_bin = build / "receiver" / "rdmavideo-recv"
        self.send_bin = build / "sender" / "rdmavideo-send"
        self.pipe_bin = build / "bench" / "rdmavideo-tcp-pipe"
        # --baseline-build: the same no-drop case from another build, for a before/after.
        self.baseline = Path(args.baseline_build) if args.baseline_build else None
        self.frames = args.frames
        self.rt_seconds = args.realtime_seconds
        self.frame_files: dict[str, Path] = {}
        self.dirs = CaseDirs(workdir)

    def _limit(self, total_bytes: int) -> float:
        # Generous: 20 s to start plus 0.4 GB/s; a whole run stays bounded.
        return 20.0 + total_bytes / 0.4e9

    @staticmethod
    def _need(path: Path | str) -> str:
        p = Path(path)
        if p.is_absolute() or "/" in str(path):
            if not p.exists():
                raise CaseError(f"{path} not found (build first, or pass --build-dir)")
            return str(p)
        found = shutil.which(str(path))
        if not found:
            raise CaseError(f"{path} not found on PATH")
        return found

    # a) plain TCP pipe, 4 MiB writes and reads --------------------------------------------
    def plain_pipe(self, fmt: Format) -> Result:
        total = self.frames * fmt.frame_bytes
        r = Result("plain TCP pipe (4 MiB)", fmt.label, "throughput", frames_sent=self.frames)
        procs: list[Proc] = []
        d = self.dirs.new(f"pipe-{fmt.label}")

        def body():
            exe = self._need(self.pipe_bin)
            recv = Proc("pipe-listen", [exe, "--listen", "0"], d)
            procs.append(recv)
            port = wait_for_port_line(recv)
            send = Proc("pipe-connect",
                        [exe, "--connect", f"127.0.0.1:{port}", "--bytes", str(total)], d)
            procs.append(send)
            deadline = time.monotonic() + self._limit(total)
            send.wait(deadline)
            recv.wait(deadline)
            send.check()
            recv.check()
            got = json.loads(recv.stdout().strip().splitlines()[-1])
            sent = json.loads(send.stdout().strip().splitlines()[-1])
            if got["bytes"] != total:
                raise CaseError(f"listener got {got['bytes']} of {total} bytes")
            r.bytes = total
            r.frames = self.frames  # the same bytes as this many frames
            r.seconds = got["seconds"]
            r.timing = "listener: first byte to EOF"
            r.extra = {"listen": got, "connect": sent,
                       "wall_seconds_connect_start_to_listen_exit": recv.end - send.start}

        return run_case(r, body, procs)

    # a2) iperf3 ------------------------------------------------------------------------------
    def iperf3(self, fmt: Format) -> Result:
        total = self.frames * fmt.frame_bytes
        r = Result("iperf3 (128 KiB buffers)", fmt.label, "throughput", frames_sent=self.frames)
        procs: list[Proc] = []
        d = self.dirs.new(f"iperf3-{fmt.label}")

        def body():
            exe = self._need("iperf3")
            port = free_port()
            server = Proc("iperf3-server", [exe, "-s", "-1", "-B", "127.0.0.1", "-p", str(port)],
                          d)
            procs.append(server)
            wait_listening(port, server)
            client = Proc("iperf3-client", [exe, "-c", "127.0.0.1", "-p", str(port), "-n",
                                            str(total), "-J"], d)
            procs.append(client)
            deadline = time.monotonic() + self._limit(total)
            client.wait(deadline)
            server.wait(deadline)
            client.check()
            end = json.loads(client.stdout())["end"]
            received = end["sum_received"]
            r.bytes = int(received["bytes"])
            r.frames = r.bytes // fmt.frame_bytes
            r.seconds = float(received["seconds"])
            r.timing = "iperf3's own: the receiver's seconds"
            r.extra = {"cpu_utilization_percent": end.get("cpu_utilization_percent", {})}

        return run_case(r, body, procs)

    # b) rdmavideo, no drops -----------------------------------------------------------------
    def rdmavideo(self, fmt: Format, realtime: bool = False, baseline: bool = False) -> Result:
        name = "rdmavideo --realtime" if realtime else "rdmavideo (no-drop)"
        build = self.baseline if baseline else None
        if baseline:
            name += ", baseline build"
        r = Result(name, fmt.label, "realtime" if realtime else "throughput")
        procs: list[Proc] = []
        d = self.dirs.new(("rt-" if realtime else "") + ("base-" if baseline else "") +
                          f"rdmavideo-{fmt.label}")
        recv_bin = build / "receiver" / "rdmavideo-recv" if build else self.recv_bin
        send_bin = build / "sender" / "rdmavideo-send" if build else self.send_bin
        recv_json, send_json = d / "recv.json", d / "send.json"

        def body():
            recv = Proc("rdmavideo-recv",
                        [self._need(recv_bin), "--listen", "127.0.0.1:0", "--quiet",
                         "--stats-json", str(recv_json)], d)
            procs.append(recv)
            port = wait_for_port_line(recv)
            argv = [self._need(send_bin), "--connect", f"127.0.0.1:{port}", "--testsrc",
                    "-s", f"{WIDTH}x{HEIGHT}", "--pix-fmt", fmt.ffmpeg, "-r", str(RATE),
                    "--quiet", "--stats-json", str(send_json)]
            if realtime:
                argv += ["--realtime", "--duration", str(self.rt_seconds)]
                limit = self.rt_seconds + 30.0
            else:
                argv += ["--no-drop", "--frames", str(self.frames)]
                limit = self._limit(self.frames * fmt.frame_bytes)
            send = Proc("rdmavideo-send", argv, d)
            procs.append(send)
            deadline = time.monotonic() + limit
            send.wait(deadline)
            recv.wait(deadline)
            send.check()
            recv.check()
            rs = json.loads(recv_json.read_text())
            ss = json.loads(send_json.read_text())
            r.frames, r.bytes, r.seconds = rs["frames"], rs["bytes"], rs["seconds"]
            r.frames_sent = ss["frames"]
            r.dropped = rs["dropped"]
            r.timing = "receiver stats JSON: stream start to end"
            if r.frames != r.frames_sent:
                r.notes.append(f"sent {r.frames_sent}, received {r.frames}")
            if not realtime and r.frames != self.frames:
                raise CaseError(f"receiver got {r.frames} of {self.frames} frames")
            transfer_cpu = rs["cpu_seconds"] + ss["cpu_seconds"]
            setup_cpu = send.cpu_seconds - ss["cpu_seconds"]
            r.extra = {
                "recv_stats": rs, "send_stats": ss,
                "transfer_cpu_seconds": transfer_cpu,
                "transfer_cpu_seconds_per_gb": transfer_cpu / (r.bytes / 1e9) if r.bytes else 0,
                "sender_setup_cpu_seconds": setup_cpu,
                "wall_seconds_send_start_to_recv_exit": recv.end - send.start,
            }
            if setup_cpu >= 0.1:
                r.notes.append(f"incl. {setup_cpu:.2f} CPU-s sender setup (test pattern)")
            if realtime:
                r.notes.append(f"latency p99 {rs['latency_ms']['p99']:.1f} ms")

        return run_case(r, body, procs)

    # c) FFmpeg rawvideo over tcp:// ---------------------------------------------------------
    def frame_file(self, fmt: Format) -> Path:
        if fmt.ffmpeg not in self.frame_files:
            path = self.work / f"frames-{fmt.ffmpeg}.raw"
            cmd = [self._need("ffmpeg"), "-nostdin", "-hide_banner", "-loglevel", "error", "-y",
                   "-f", "lavfi", "-i", f"testsrc2=s={WIDTH}x{HEIGHT}:r={RATE}",
                   "-frames:v", "4", "-pix_fmt", fmt.ffmpeg, "-f", "rawvideo", str(path)]
            try:
                subprocess.run(cmd, check=True, timeout=60, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            except subprocess.CalledProcessError as e:
                raise CaseError(f"ffmpeg could not render frames: {e.stderr.decode()[-300:]}")
            except subprocess.TimeoutExpired:
                raise CaseError("ffmpeg took over 60 s to render 4 frames")
            self.frame_files[fmt.ffmpeg] = path
        return self.frame_files[fmt.ffmpeg]

    def ffmpeg(self, fmt: Format) -> Result:
        r = Result("ffmpeg rawvideo tcp://", fmt.label, "throughput", frames_sent=self.frames)
        procs: list[Proc] = []
        d = self.dirs.new(f"ffmpeg-{fmt.label}")
        progress = d / "progress.txt"

        def body():
            exe = self._need("ffmpeg")
            frames = self.frame_file(fmt)
            port = free_port()
            raw = ["-f", "rawvideo", "-pix_fmt", fmt.ffmpeg, "-s", f"{WIDTH}x{HEIGHT}"]
            common = [exe, "-nostdin", "-hide_banner", "-loglevel", "error"]
            recv = Proc("ffmpeg-recv",
                        common + ["-progress", str(progress)] + raw
                        + ["-i", f"tcp://127.0.0.1:{port}?listen=1", "-f", "null", "-"], d)
            procs.append(recv)
            wait_listening(port, recv)
            send = Proc("ffmpeg-send",
                        common + raw + ["-stream_loop", "-1", "-i", str(frames),
                                        "-frames:v", str(self.frames), "-f", "rawvideo",
                                        f"tcp://127.0.0.1:{port}"], d)
            procs.append(send)
            deadline = time.monotonic() + self._limit(self.frames * fmt.frame_bytes)
            send.wait(deadline)
            recv.wait(deadline)
            send.check()
            recv.check()
            counts = re.findall(r"^frame=(\d+)", progress.read_text(), re.M)
            if not counts:
                raise CaseError("ffmpeg receiver wrote no progress")
            r.frames = int(counts[-1])
            if r.frames != self.frames:
                raise CaseError(f"ffmpeg receiver got {r.frames} of {self.frames} frames")
            r.bytes = r.frames * fmt.frame_bytes
            r.seconds = recv.end - send.start
            r.timing = "wall: sender start to receiver exit"

        return run_case(r, body, procs)

    # d) GStreamer, lossless: tcpclientsink -> tcpserversrc ----------------------------------
    def _caps(self, fmt: Format) -> str:
        return f"video/x-raw,format={fmt.gst},width={WIDTH},height={HEIGHT},framerate={RATE}/1"

    def _parse_sink(self, fmt: Format) -> list[str]:
        # fakesink silent=false with -v prints one line per frame (after rawvideoparse, so
        # 60 lines a second, not one per 4 KiB read); the lines are counted.
        return ["!", "rawvideoparse", f"format={fmt.gst_parse}", f"width={WIDTH}",
                f"height={HEIGHT}", "!", "fakesink", "silent=false"]

    def gstreamer(self, fmt: Format) -> Result:
        r = Result("gstreamer tcpclientsink>tcpserversrc", fmt.label, "throughput",
                   frames_sent=self.frames)
        procs: list[Proc] = []
        d = self.dirs.new(f"gst-{fmt.label}")

        def body():
            exe = self._need("gst-launch-1.0")
            port = free_port()
            recv = Proc("gst-recv", [exe, "-v", "tcpserversrc", "host=127.0.0.1", f"port={port}"]
                        + self._parse_sink(fmt), d)
            procs.append(recv)
            wait_listening(port, recv)
            send = Proc("gst-send",
                        [exe, "-q", "videotestsrc", f"num-buffers={self.frames}",
                         "pattern=solid-color", "!", self._caps(fmt), "!", "tcpclientsink",
                         "host=127.0.0.1", f"port={port}", "sync=false"], d)
            procs.append(send)
            deadline = time.monotonic() + self._limit(self.frames * fmt.frame_bytes)
            send.wait(deadline)
            recv.wait(deadline)
            send.check()
            recv.check()
            r.frames, eos = fakesink_frames(recv)
            if not eos:
                raise CaseError("gst receiver did not reach EOS")
            if r.frames != self.frames:
                raise CaseError(f"gst receiver got {r.frames} of {self.frames} frames")
            r.bytes = r.frames * fmt.frame_bytes
            r.seconds = recv.end - send.start
            r.timing = "wall: sender start to receiver exit"

        return run_case(r, body, procs)

    # f) GStreamer live, the pair: tcpserversink -> tcpclientsrc ---------------------
    def gstreamer_live(self, fmt: Format) -> Result:
        n = int(round(self.rt_seconds * RATE))
        r = Result("gstreamer live tcpserversink>tcpclientsrc", fmt.label, "realtime",
                   frames_sent=n)
        procs: list[Proc] = []
        d = self.dirs.new(f"rt-gst-{fmt.label}")

        def body():
            exe = self._need("gst-launch-1.0")
            port = free_port()
            # A live source paced at 60 fps; tcpserversink never blocks, so a client that falls
            # more than 8 frames behind is moved to the latest frame (frames lost) instead of
            # letting the sink's queue grow without bound.
            send = Proc("gst-send",
                        [exe, "-q", "videotestsrc", "is-live=true", f"num-buffers={n}",
                         "pattern=solid-color", "!", self._caps(fmt), "!", "tcpserversink",
                         "host=127.0.0.1", f"port={port}", "units-soft-max=8",
                         "recover-policy=latest"], d)
            procs.append(send)
            wait_listening(port, send)
            recv = Proc("gst-recv", [exe, "-v", "tcpclientsrc", "host=127.0.0.1", f"port={port}"]
                        + self._parse_sink(fmt), d)
            procs.append(recv)
            deadline = time.monotonic() + self.rt_seconds + 30.0
            recv.wait(deadline)
            send.wait(deadline)
            send.check()
            recv.check()
            r.frames, eos = fakesink_frames(recv)
            if not eos:
                raise CaseError("gst receiver did not reach EOS")
            r.bytes = r.frames * fmt.frame_bytes
            r.dropped = max(0, n - r.frames)
            r.seconds = recv.end - recv.start
            r.timing = "wall: receiver start to receiver exit"
            r.notes.append("lost = frames not delivered (a few before the client connects)")

        return run_case(r, body, procs)


# ---------------------------------------------------------------------------------------------
# Report


def render_table(results: list[Result]) -> str:
    pipes = {r.format: r for r in results if r.case.startswith("plain") and r.ok}
    head = ["case", "format", "frames", "fps", "GB/s", "CPU s/GB", "vs pipe", "dropped", "notes"]
    rows = []
    for r in results:
        if not r.ok:
            rows.append([r.case, r.format, "-", "-", "-", "-", "-", "-", "FAILED: " + r.error])
            continue
        pipe = pipes.get(r.format)
        ratio = "-"
        if r.kind == "throughput" and pipe and pipe.gbps > 0:
            ratio = f"{r.gbps / pipe.gbps:.2f}x"
        rows.append([r.case, r.format, str(r.frames), f"{r.fps:.1f}", f"{r.gbps:.2f}",
                     f"{r.cpu_per_gb:.3f}", ratio,
                     str(r.dropped) if (r.kind == "realtime" or r.dropped) else "-",
                     "; ".join(r.notes)])
    # A rule between the throughput and the real-time rows.
    rules = {i for i in range(1, len(results)) if results[i].kind != results[i - 1].kind}
    return text_table(head, rows, {2, 3, 4, 5, 6, 7}, rules)


def evaluate_targets(results: list[Result], realtime_seconds: float) -> list[dict]:
    by = {(r.case, r.format): r for r in results}
    targets = []

    def add(name, passed, detail):
        targets.append({"target": name, "pass": passed, "detail": detail})

    for fmt in FORMATS:
        rv = by.get(("rdmavideo (no-drop)", fmt.label))
        pipe = by.get(("plain TCP pipe (4 MiB)", fmt.label))
        if rv and rv.ok and pipe and pipe.ok and pipe.gbps > 0:
            ratio = rv.gbps / pipe.gbps
            add(f"rdmavideo >= {TARGET_RATIO}x plain pipe ({fmt.label})", ratio >= TARGET_RATIO,
                f"{rv.gbps:.2f} GB/s vs {pipe.gbps:.2f} GB/s = {ratio:.2f}x")
        else:
            add(f"rdmavideo >= {TARGET_RATIO}x plain pipe ({fmt.label})", None, "not measured")
        if rv and rv.ok:
            # Judged without the sender's one-time test-pattern render (before it connects):
            # that is the source, not the transport, and no other row pays for its source.
            setup = rv.extra.get("sender_setup_cpu_seconds", 0.0)
            net = (rv.cpu_seconds - setup) / (rv.bytes / 1e9)
            window = rv.extra.get("transfer_cpu_seconds_per_gb", 0.0)
            add(f"rdmavideo <= {TARGET_CPU_PER_GB} CPU s/GB ({fmt.label})",
                net <= TARGET_CPU_PER_GB,
                f"{net:.3f} CPU s/GB without the sender's {setup:.2f} s test-pattern setup "
                f"({rv.cpu_per_gb:.3f} whole processes as in the table; {window:.3f} in the "
                f"stats JSON transfer windows)")
        else:
            add(f"rdmavideo <= {TARGET_CPU_PER_GB} CPU s/GB ({fmt.label})", None, "not measured")
    ip, rv = by.get(("iperf3 (128 KiB buffers)", "RGBA")), by.get(("rdmavideo (no-drop)", "RGBA"))
    name = f"rdmavideo >= {TARGET_IPERF_RATIO}x iperf3 at <= {TARGET_IPERF_CPU}x its CPU s/GB (RGBA)"
    if ip and ip.ok and rv and rv.ok and ip.gbps > 0 and ip.cpu_per_gb > 0:
        ratio, cpu = rv.gbps / ip.gbps, rv.cpu_per_gb / ip.cpu_per_gb
        add(name, ratio >= TARGET_IPERF_RATIO and cpu <= TARGET_IPERF_CPU,
            f"{rv.gbps:.2f} GB/s vs {ip.gbps:.2f} = {ratio:.2f}x, CPU s/GB {rv.cpu_per_gb:.3f} vs "
            f"{ip.cpu_per_gb:.3f} = {cpu:.2f}x")
    else:
        add(name, None, "not measured (iperf3 missing?)")
    rt = by.get(("rdmavideo --realtime", "RGBA"))
    name = f"real time 4K{RATE} RGBA, 0 drops"
    if rt and rt.ok:
        # Frames the source scheduled in the run: a sender that falls behind sends fewer
        # without counting drops, so delivered frames are held against the schedule too.
        scheduled = int(round(realtime_seconds * RATE))
        min_fps = TARGET_FPS_FRACTION * RATE
        passed = (rt.dropped == 0 and rt.frames == rt.frames_sent
                  and rt.frames >= TARGET_FPS_FRACTION * scheduled and rt.fps >= min_fps)
        add(name, passed, f"{rt.fps:.1f} fps (>= {min_fps:.1f}), dropped {rt.dropped}, "
            f"received {rt.frames} of {rt.frames_sent} sent, {scheduled} scheduled")
    else:
        add(name, None, "not measured")
    return targets


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=600,
                        help="frames per throughput case (default 600)")
    parser.add_argument("--realtime-seconds", type=float, default=5.0,
                        help="length of each real-time case in seconds (default 5)")
    parser.add_argument("--build-dir", default=str(REPO_ROOT / "build"),
                        help="CMake build folder with the binaries (default: build/ at the repo root)")
    parser.add_argument("--quick", action="store_true",
                        help="CI smoke: 60 frames and 2 s real-time cases")
    parser.add_argument("--json", metavar="FILE", help="write every result to FILE as JSON")
    parser.add_argument("--baseline-build", metavar="DIR",
                        help="also run the no-drop case with the programs of this build (an "
                             "earlier commit's), alternating with this build's: a before/after")
    parser.add_argument("--repeat", type=int, default=None, metavar="N",
                        help="run the plain pipe and rdmavideo no-drop cases N times each, "
                             "alternating, and report the median (default 3; 1 with --quick)")
    parser.add_argument("--idle-wait", type=float, default=15.0, metavar="SEC",
                        help="before each case, wait up to SEC seconds for the machine to be "
                             "idle (default 15; 0: do not wait)")
    args = parser.parse_args()
    if args.quick:
        args.frames = min(args.frames, 60)
        args.realtime_seconds = min(args.realtime_seconds, 2.0)
    if args.repeat is None:
        args.repeat = 1 if args.quick else 3
    if args.frames < 1 or args.realtime_seconds <= 0 or args.repeat < 1:
        parser.error("--frames, --realtime-seconds and --repeat must be positive")

    interrupt_on_sigterm()
    workdir = Path(tempfile.mkdtemp(prefix="rdmavideo-tcp-bench-"))
    runs: list[Result] = []
    started = time.monotonic()
    interrupted = False
    try:
        bench = Bench(args, workdir)
        plan = []
        for fmt in FORMATS:
            # The two rows the throughput target compares run --repeat times, alternating.
            once = [(bench.plain_pipe, fmt), (bench.rdmavideo, fmt), (bench.iperf3, fmt)]
            if bench.baseline:
                once.append((lambda f: bench.rdmavideo(f, baseline=True), fmt))
            plan += once * args.repeat
            plan += [(bench.ffmpeg, fmt), (bench.gstreamer, fmt)]
        for fmt in FORMATS:
            plan += [(lambda f: bench.rdmavideo(f, realtime=True), fmt),
                     (bench.gstreamer_live, fmt)]
        print(f"rdmavideo TCP loopback bench: {WIDTH}x{HEIGHT}, {args.frames} frames per "
              f"throughput case, {args.realtime_seconds:g} s real-time cases, "
              f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}", file=sys.stderr)
        for fn, fmt in plan:
            if args.idle_wait > 0:
                wait_idle(args.idle_wait)
            r = fn(fmt)
            status = "ok" if r.ok else "FAILED: " + r.error
            print(f"  {r.case:42s} {r.format}  {r.gbps:5.2f} GB/s  {status}", file=sys.stderr)
            runs.append(r)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    results = combine(runs)
    print()
    print(f"TCP loopback, {WIDTH}x{HEIGHT}, {args.frames} frames per throughput case "
          f"(UYVY {FORMATS[0].frame_bytes} B, RGBA {FORMATS[1].frame_bytes} B a frame); "
          f"real time: {RATE} fps for {args.realtime_seconds:g} s")
    print(render_table(results))
    print("GB = 1e9 bytes. CPU s/GB: user+sys of both processes (os.wait4, whole process) per "
          "GB delivered.")
    print("Time: pipe = listener's first byte to EOF; rdmavideo = receiver stats JSON; "
          "ffmpeg/gstreamer = wall time, sender start to receiver exit (gstreamer live: "
          "receiver start to exit).")
    targets = evaluate_targets(results, args.realtime_seconds)
    print()
    print_verdicts("Targets", targets)
    warn_if_busy(runs)
    print(f"\nTotal time {time.monotonic() - started:.0f} s.")

    if args.json:
        doc = {
            "width": WIDTH, "height": HEIGHT, "frames": args.frames,
            "realtime_seconds": args.realtime_seconds, "repeat": args.repeat,
            "cpus": os.cpu_count(),
            "results": [r.to_json() for r in results], "targets": targets,
        }
        Path(args.json).write_text(json.dumps(doc, indent=2) + "\n")

    failed = [r for r in runs if not r.ok]
    if interrupted:
        return 130
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
