#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Moves 3840x2160 UYVY frames between two gst-launch-1.0 processes on one machine with
rdmasink -> rdmasrc (over TCP loopback), next to GStreamer's TCP and shared-memory elements,
and prints one table with the verdicts.

Every pipeline runs with sync=false on 127.0.0.1 (or a socket file) with a time limit. CPU
seconds are each process's user + system time from os.wait4 (both ends summed, whole
process). Exits 0 when every case ran, whatever the numbers; 1 when a case failed to run or
rdmavideo lost a frame. See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import (  # noqa: E402  (the process and result helpers are shared)
    REPO_ROOT, CaseDirs, CaseError, Proc, Result, combine, fakesink_frames, free_port,
    interrupt_on_sigterm, print_verdicts, run_case, text_table, wait_idle, wait_listening,
    warn_if_busy)

WIDTH, HEIGHT = 3840, 2160
RATE = 60
FORMAT, PARSE_FORMAT, BYTES_PER_PIXEL = "UYVY", "uyvy", 2
FRAME_BYTES = WIDTH * HEIGHT * BYTES_PER_PIXEL
CAPS = f"video/x-raw,format={FORMAT},width={WIDTH},height={HEIGHT},framerate={RATE}/1"
# Frames a receiver may hold: rdmasrc's default ring, the shm area, tcpserversink's soft limit.
QUEUE_FRAMES = 8
# tcpserversink never holds its source back, so its source is paced: at this rate (4 GB/s)
# it offers more than any TCP row carries, and what reaches the client is that row's rate.
OFFER_FPS = 240

TARGET_RATIO = 1.5  # rdmavideo GB/s against the better GStreamer TCP row

CEILING = "source: videotestsrc ! fakesink"
RDMAVIDEO = "rdmasink > rdmasrc (tcp)"
TCP_CLIENT_SINK = "tcpclientsink > tcpserversrc"
TCP_SERVER_SINK = "tcpserversink > tcpclientsrc"
SHM = "shmsink > shmsrc"
TCP_ROWS = (TCP_CLIENT_SINK, TCP_SERVER_SINK)


def gst_fields(text: str, name: str) -> dict | None:
    """The last `name` element message that gst-launch-1.0 -m printed, as a dict."""
    lines = [line for line in text.splitlines() if f": {name}, " in line]
    if not lines:
        return None
    body = lines[-1].split(f": {name}, ", 1)[1].rstrip(";")
    out = {}
    for key, kind, value in re.findall(r'([\w-]+)=\((\w+)\)("[^"]*"|[^,]*)', body):
        value = value.strip('"')
        if kind in ("guint64", "uint64", "int", "uint", "gint64"):
            out[key] = int(value)
        elif kind in ("double", "float"):
            out[key] = float(value)
        else:
            out[key] = value
    return out


class Bench:
    def __init__(self, args, workdir: Path):
        self.frames = args.frames
        self.verify = args.verify
        self.dirs = CaseDirs(workdir)
        self.gst = shutil.which("gst-launch-1.0")
        if not self.gst:
            raise CaseError("gst-launch-1.0 not found (install gstreamer1.0-tools)")

    def _limit(self) -> float:
        # Generous: 20 s to start plus 0.3 GB/s; a whole run stays bounded.
        return 20.0 + self.frames * FRAME_BYTES / 0.3e9

    def _source(self, flag: str = "-q") -> list[str]:
        # solid-color fills a frame at memory speed; the ceiling row shows it is not the limit.
        return [self.gst, flag, "videotestsrc", f"num-buffers={self.frames}",
                "pattern=solid-color", "!", CAPS, "!"]

    def _parse_sink(self) -> list[str]:
        # Byte-stream receivers cut the stream back into frames; fakesink silent=false with -v
        # prints one line per frame, which is counted.
        return ["!", "rawvideoparse", f"format={PARSE_FORMAT}", f"width={WIDTH}",
                f"height={HEIGHT}", f"framerate={RATE}/1", "!", "fakesink", "silent=false"]

    @staticmethod
    def _finish(r: Result, first: Proc, recv: Proc, frames: int) -> None:
        r.frames = frames
        r.bytes = frames * FRAME_BYTES
        r.seconds = recv.end - first.start
        r.timing = "wall: first process start to receiver exit"

    # The source alone: how fast videotestsrc fills 4K frames for fakesink. ---------------------
    def ceiling(self) -> Result:
        r = Result(CEILING, FORMAT, "source", frames_sent=self.frames)
        procs: list[Proc] = []
        d = self.dirs.new("ceiling")

        def body():
            p = Proc("source", [self.gst, "-v", "videotestsrc", f"num-buffers={self.frames}",
                                "pattern=solid-color", "!", CAPS, "!", "fakesink",
                                "silent=false", "sync=false"], d)
            procs.append(p)
            p.wait(time.monotonic() + self._limit())
            p.check()
            frames, eos = fakesink_frames(p)
            if not eos or frames != self.frames:
                raise CaseError(f"fakesink got {frames} of {self.frames} frames (EOS {eos})")
            self._finish(r, p, p, frames)

        return run_case(r, body, procs)

    # rdmasink -> rdmasrc over TCP loopback. -------------------------------------------------------
    def rdmavideo(self) -> Result:
        r = Result(RDMAVIDEO, FORMAT, "throughput", frames_sent=self.frames)
        procs: list[Proc] = []
        d = self.dirs.new("rdmavideo")

        def body():
            port = free_port()
            recv = Proc("rdmasrc", [self.gst, "-m", "-v", "rdmasrc", "transport=tcp",
                                    "address=127.0.0.1", f"port={port}",
                                    f"verify={str(self.verify).lower()}", "!", "fakesink",
                                    "silent=false"], d)
            procs.append(recv)
            wait_listening(port, recv)
            send = Proc("rdmasink", self._source("-m") + [
                "rdmasink", "transport=tcp", "host=127.0.0.1", f"port={port}",
                f"checksum={str(self.verify).lower()}", "sync=false"], d)
            procs.append(send)
            deadline = time.monotonic() + self._limit()
            send.wait(deadline)
            recv.wait(deadline)
            send.check()
            recv.check()
            sink = gst_fields(send.stdout(), "rdmasink-stats")
            src = gst_fields(recv.stdout(), "rdmasrc-stats")
            if sink is None or src is None:
                raise CaseError("no rdmasink-stats or rdmasrc-stats message at EOS")
            frames, eos = fakesink_frames(recv)
            if not eos:
                raise CaseError("rdmasrc's pipeline did not reach EOS")
            self._finish(r, send, recv, frames)
            r.frames_sent = sink["frames"]
            r.dropped = sink["dropped"] + src["dropped"]
            r.extra = {"rdmasink_stats": sink, "rdmasrc_stats": src}
            # Every frame delivered: asked for, sent, received and rendered all agree.
            counts = {"asked": self.frames, "rdmasink": sink["frames"],
                      "rdmasrc": src["frames"], "fakesink": frames}
            if len(set(counts.values())) != 1:
                raise CaseError("frames lost: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
            for side, s in (("rdmasink", sink), ("rdmasrc", src)):
                if s["transport"] != "tcp":
                    raise CaseError(f"{side} ran over {s['transport']}, not tcp")
            if src["checksum-failures"]:
                raise CaseError(f"rdmasrc counted {src['checksum-failures']} checksum failures")
            if src["seconds"] > 0:
                r.notes.append(f"{src['bytes'] / src['seconds'] / 1e9:.2f} GB/s in rdmasrc's "
                               "stats window")
            if self.verify:
                r.notes.append("checksummed and verified")

        return run_case(r, body, procs)

    # tcpclientsink -> tcpserversrc: blocking, lossless. -----------------------------------------
    def tcp_client_sink(self) -> Result:
        r = Result(TCP_CLIENT_SINK, FORMAT, "throughput", frames_sent=self.frames)
        procs: list[Proc] = []
        d = self.dirs.new("tcpclientsink")

        def body():
            port = free_port()
            recv = Proc("tcpserversrc", [self.gst, "-v", "tcpserversrc", "host=127.0.0.1",
                                         f"port={port}"] + self._parse_sink(), d)
            procs.append(recv)
            wait_listening(port, recv)
            send = Proc("tcpclientsink", self._source() + [
                "tcpclientsink", "host=127.0.0.1", f"port={port}", "sync=false"], d)
            procs.append(send)
            deadline = time.monotonic() + self._limit()
            send.wait(deadline)
            recv.wait(deadline)
            send.check()
            recv.check()
            frames, eos = fakesink_frames(recv)
            if not eos:
                raise CaseError("tcpserversrc's pipeline did not reach EOS")
            self._finish(r, send, recv, frames)
            if frames != self.frames:
                raise CaseError(f"tcpserversrc got {frames} of {self.frames} frames")

        return run_case(r, body, procs)

    # tcpserversink -> tcpclientsrc: never blocks its upstream. -----------------------------------
    def tcp_server_sink(self) -> Result:
        r = Result(TCP_SERVER_SINK, FORMAT, "throughput", frames_sent=self.frames)
        procs: list[Proc] = []
        d = self.dirs.new("tcpserversink")

        def body():
            port = free_port()
            # Without a limit its per-client queue would hold every frame the source makes
            # faster than the client reads; past 8 queued frames the client is moved to the
            # latest one, and the frames skipped are lost.
            send = Proc("tcpserversink", [
                self.gst, "-q", "videotestsrc", "is-live=true", f"num-buffers={self.frames}",
                "pattern=solid-color", "!", CAPS.replace(f"{RATE}/1", f"{OFFER_FPS}/1"), "!",
                "tcpserversink", "host=127.0.0.1", f"port={port}", "sync=false",
                f"units-soft-max={QUEUE_FRAMES}", "recover-policy=latest"], d)
            procs.append(send)
            wait_listening(port, send)
            recv = Proc("tcpclientsrc", [self.gst, "-v", "tcpclientsrc", "host=127.0.0.1",
                                         f"port={port}"] + self._parse_sink(), d)
            procs.append(recv)
            deadline = time.monotonic() + self._limit()
            send.wait(deadline)
            recv.wait(deadline)
            send.check()
            recv.check()
            frames, eos = fakesink_frames(recv)
            if not eos:
                raise CaseError("tcpclientsrc's pipeline did not reach EOS")
            self._finish(r, recv, recv, frames)
            r.timing = "wall: receiver start to receiver exit"
            r.dropped = self.frames - frames
            r.notes.append(f"source paced at {OFFER_FPS} fps; time from receiver start; lost: "
                           "before the client connected, skipped by recover-policy, or queued "
                           "at the sender's EOS")

        return run_case(r, body, procs)

    # shmsink -> shmsrc: frames in shared memory, one machine only. -------------------------------
    def shm(self) -> Result:
        r = Result(SHM, FORMAT, "throughput", frames_sent=self.frames)
        procs: list[Proc] = []
        d = self.dirs.new("shm")

        def body():
            sock = d / "shm.sock"
            # identity drop-allocation: upstream must not render into shmsink's own allocator.
            # Memory from it is sent without waiting for space, so nothing holds the source
            # back until the area is used up; the pool then owns every block and the next
            # frame waits for space forever (GStreamer 1.22). Copied frames wait properly.
            send = Proc("shmsink", self._source() + [
                "identity", "drop-allocation=true", "!", "shmsink", f"socket-path={sock}",
                f"shm-size={QUEUE_FRAMES * FRAME_BYTES + (1 << 20)}",
                "wait-for-connection=true", "sync=false"], d)
            procs.append(send)
            deadline = time.monotonic() + 10.0
            while not sock.exists():
                if send.done or time.monotonic() > deadline:
                    raise CaseError("shmsink did not create its socket: "
                                    + " | ".join(send.stderr().strip().splitlines()[-3:]))
                time.sleep(0.005)
            recv = Proc("shmsrc", [self.gst, "-v", "shmsrc", f"socket-path={sock}"]
                        + self._parse_sink(), d)
            procs.append(recv)
            deadline = time.monotonic() + self._limit()
            send.wait(deadline)
            recv.wait(deadline)
            # shmsink sends no EOS: shmsrc ends with "Control socket has closed" once the
            # sender has gone, and the sender's poll thread reports EBUSY as it stops. Both
            # exit 1 on a run that delivered everything; the frame count is the check.
            for proc, known in ((send, "Failed waiting on fd activity"),
                                (recv, "Control socket has closed")):
                if proc.exit_code != 0 and known not in proc.stdout() + proc.stderr():
                    proc.check()
            frames, _ = fakesink_frames(recv)
            self._finish(r, send, recv, frames)
            r.dropped = self.frames - frames
            r.notes.append("1 copy a frame into shm (sender)")
            if r.dropped:
                r.notes.append(f"{r.dropped} lost")

        return run_case(r, body, procs)


# ---------------------------------------------------------------------------------------------
# Report


def copies_per_frame(r: Result) -> tuple[float, float] | None:
    sink, src = r.extra.get("rdmasink_stats"), r.extra.get("rdmasrc_stats")
    if not sink or not src or not sink["frames"] or not src["frames"]:
        return None
    return sink["copies"] / sink["frames"], src["copies"] / src["frames"]


def render_table(rows: list[Result]) -> str:
    head = ["case", "sent", "received", "fps", "GB/s", "CPU s/GB", "copies/frame", "notes"]
    cells = []
    for r in rows:
        if not r.ok:
            cells.append([r.case, str(r.frames_sent), "-", "-", "-", "-", "-",
                          "FAILED: " + r.error])
            continue
        copies = copies_per_frame(r)
        cells.append([r.case, str(r.frames_sent), str(r.frames), f"{r.fps:.1f}", f"{r.gbps:.2f}",
                      f"{r.cpu_per_gb:.3f}",
                      f"{copies[0]:g} sink, {copies[1]:g} src" if copies else "-",
                      "; ".join(r.notes)])
    return text_table(head, cells, {1, 2, 3, 4, 5})


def evaluate(rows: list[Result]) -> list[dict]:
    by = {r.case: r for r in rows if r.ok}
    verdicts = []

    def add(name, passed, detail):
        verdicts.append({"target": name, "pass": passed, "detail": detail})

    rv = by.get(RDMAVIDEO)
    tcp = [by[c] for c in TCP_ROWS if c in by]
    name = f"rdmavideo >= {TARGET_RATIO}x GStreamer's TCP elements"
    if rv and tcp:
        best = max(tcp, key=lambda r: r.gbps)
        ratio = rv.gbps / best.gbps if best.gbps > 0 else float("inf")
        others = ", ".join(f"{r.gbps:.2f} GB/s {r.case}" for r in tcp)
        add(name, ratio >= TARGET_RATIO,
            f"{rv.gbps:.2f} GB/s vs the better TCP row {best.gbps:.2f} GB/s = {ratio:.2f}x "
            f"({others})")
    else:
        add(name, None, "not measured")
    copies = copies_per_frame(rv) if rv else None
    if copies:
        add("rdmavideo copies per frame 0", copies == (0.0, 0.0),
            f"rdmasink {copies[0]:g}, rdmasrc {copies[1]:g} "
            f"({rv.extra['rdmasink_stats']['copies']} and {rv.extra['rdmasrc_stats']['copies']} "
            f"copies in {rv.frames} frames)")
    else:
        add("rdmavideo copies per frame 0", None, "not measured")
    if rv:
        add("rdmavideo delivered every frame", rv.frames == rv.frames_sent,
            f"{rv.frames} received of {rv.frames_sent} sent")
    else:
        add("rdmavideo delivered every frame", False if RDMAVIDEO in {r.case for r in rows}
            else None, "the case failed")
    ceiling = by.get(CEILING)
    if rv and ceiling and ceiling.gbps > 0:
        share = rv.gbps / ceiling.gbps
        add("source is not the bottleneck", share < 0.8,
            f"videotestsrc alone {ceiling.gbps:.2f} GB/s; rdmavideo reaches {share:.0%} of it"
            + ("" if share < 0.8 else ": the source limits this row, not the transport"))
    return verdicts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default=str(REPO_ROOT / "build"),
                        help="CMake build folder with gst-plugin/libgstrdmavideo.so "
                             "(default: build/ at the repo root)")
    parser.add_argument("--frames", type=int, default=600,
                        help="frames per case (default 600)")
    parser.add_argument("--repeat", type=int, default=None, metavar="N",
                        help="runs of every case, alternating; the row is the median by GB/s "
                             "(default 3; 1 with --quick)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 60 frames, one run of each case, no idle wait")
    parser.add_argument("--verify", action="store_true",
                        help="rdmasink checksum=true and rdmasrc verify=true (costs CPU on "
                             "both ends; off by default, as the other rows check nothing)")
    parser.add_argument("--idle-wait", type=float, default=None, metavar="SEC",
                        help="before each case, wait up to SEC seconds for the machine to be "
                             "idle (default 15; 0 with --quick)")
    parser.add_argument("--json", metavar="FILE", help="write every result to FILE as JSON")
    args = parser.parse_args()
    if args.quick:
        args.frames = min(args.frames, 60)
    if args.repeat is None:
        args.repeat = 1 if args.quick else 3
    if args.idle_wait is None:
        args.idle_wait = 0.0 if args.quick else 15.0
    if args.frames < 1 or args.repeat < 1:
        parser.error("--frames and --repeat must be positive")
    plugin_dir = Path(args.build_dir).resolve() / "gst-plugin"
    if not (plugin_dir / "libgstrdmavideo.so").exists():
        parser.error(f"{plugin_dir}/libgstrdmavideo.so not found: build the gstrdmavideo target "
                     "or pass --build-dir")

    interrupt_on_sigterm()
    workdir = Path(tempfile.mkdtemp(prefix="rdmavideo-gst-bench-"))
    # A private registry, scanned once here and not inside a timed case.
    os.environ["GST_PLUGIN_PATH"] = str(plugin_dir)
    os.environ["GST_REGISTRY"] = str(workdir / "registry.bin")
    runs: list[Result] = []
    started = time.monotonic()
    interrupted = False
    setup_error = None
    try:
        bench = Bench(args, workdir)
        inspect = Proc("gst-inspect", [shutil.which("gst-inspect-1.0") or "gst-inspect-1.0",
                                       "rdmasink"], workdir)
        inspect.wait(time.monotonic() + 120.0)
        inspect.check()
        cases = [bench.ceiling, bench.rdmavideo, bench.tcp_client_sink, bench.tcp_server_sink,
                 bench.shm]
        print(f"rdmavideo GStreamer bench: {WIDTH}x{HEIGHT} {FORMAT}, {args.frames} frames per "
              f"case, {args.repeat} run(s) each, {os.cpu_count()} CPUs, "
              f"load {os.getloadavg()[0]:.2f}", file=sys.stderr)
        for _ in range(args.repeat):
            for case in cases:
                if args.idle_wait > 0:
                    wait_idle(args.idle_wait)
                r = case()
                status = "ok" if r.ok else "FAILED: " + r.error
                print(f"  {r.case:34s} {r.frames:5d}/{r.frames_sent:<5d} {r.gbps:5.2f} GB/s  "
                      f"{status}", file=sys.stderr)
                runs.append(r)
    except KeyboardInterrupt:
        interrupted = True
    except CaseError as e:
        setup_error = str(e)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if setup_error:
        print(f"run_gst_bench: {setup_error}", file=sys.stderr)
        return 1

    rows = combine(runs, note="median of {n} ({low:.2f}-{high:.2f} GB/s)")
    print()
    print(f"GStreamer, two gst-launch-1.0 processes on one machine, {WIDTH}x{HEIGHT} {FORMAT} "
          f"({FRAME_BYTES} B a frame), {args.frames} frames, sync=false, videotestsrc "
          "pattern=solid-color")
    print(render_table(rows))
    print("GB = 1e9 bytes. Time: wall, first process start to receiver exit. CPU s/GB: "
          "user+sys of both processes (os.wait4, whole process) per GB received.")
    verdicts = evaluate(rows)
    print()
    print_verdicts("Verdicts", verdicts)
    warn_if_busy(runs)
    print(f"\nTotal time {time.monotonic() - started:.0f} s.")

    if args.json:
        doc = {"width": WIDTH, "height": HEIGHT, "format": FORMAT, "frames": args.frames,
               "repeat": args.repeat, "cpus": os.cpu_count(), "verify": args.verify,
               "results": [r.to_json() for r in rows], "verdicts": verdicts}
        Path(args.json).write_text(json.dumps(doc, indent=2) + "\n")

    if interrupted:
        return 130
    return 1 if any(not r.ok for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
