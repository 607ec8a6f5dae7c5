#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Sound through the GStreamer elements: 1920x1080 UYVY at 60 fps from a live videotestsrc,
with two live 48 kHz stereo F32 tracks (audiotestsrc, 10 ms buffers), between two
gst-launch-1.0 processes on one machine over 127.0.0.1:

  rdmasink > rdmasrc, picture only         the same pipelines, the tracks made but not sent
                                           (into a fakesink on the sender)
  rdmasink > rdmasrc, picture + 2 tracks   rdmasink's audio_0/audio_1 into rdmasrc's pads
  matroskamux > tcpserversink > tcpclientsrc > matroskademux, picture + 2 tracks
                                           GStreamer's way: a mux and a demux a frame

Prints one table: pictures the receiver got (rdmasrc's stats; the Matroska row is not
counted frame by frame), each end's CPU per picture (user + system of the whole process from
os.wait4) and both together, each against the picture-only row. Target: the tracks cost
rdmavideo under 2% more CPU a picture than the picture alone. Medians of --runs runs.

  run_gst_audio_bench.py [--build-dir build] [--runs 3] [--seconds 10] [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import (  # noqa: E402
    REPO_ROOT, CaseDirs, CaseError, Proc, free_port, text_table, wait_listening)

WIDTH, HEIGHT, RATE = 1920, 1080, 60
VIDEO = f"video/x-raw,format=UYVY,width={WIDTH},height={HEIGHT},framerate={RATE}/1"
AUDIO = "audio/x-raw,format=F32LE,layout=interleaved,rate=48000,channels=2"
TARGET = 1.02  # tracks against the picture alone, CPU a picture, rdmavideo

PICTURE = "rdmasink > rdmasrc, picture only"
TRACKS = "rdmasink > rdmasrc, picture + 2 tracks"
MATROSKA = "matroskamux > tcpserversink > tcpclientsrc > matroskademux, picture + 2 tracks"


def stats_frames(text: str) -> int | None:
    """frames in the last rdmasrc-stats message gst-launch-1.0 -m printed."""
    found = re.findall(r"rdmasrc-stats, frames=\(guint64\)(\d+)", text)
    return int(found[-1]) if found else None


class Bench:
    def __init__(self, seconds: float, workdir: Path):
        self.seconds = seconds
        self.frames = int(seconds * RATE)
        self.chunks = int(seconds * 100)  # 10 ms buffers
        self.dirs = CaseDirs(workdir)
        self.gst = shutil.which("gst-launch-1.0")
        if not self.gst:
            raise CaseError("gst-launch-1.0 not found (install gstreamer1.0-tools)")

    def _picture(self) -> list[str]:
        return ["videotestsrc", "is-live=true", "pattern=solid-color", f"num-buffers={self.frames}",
                "!", VIDEO]

    def _tone(self, hz: int) -> list[str]:
        return ["audiotestsrc", "is-live=true", f"freq={hz}", "samplesperbuffer=480",
                f"num-buffers={self.chunks}", "!", AUDIO]

    def _pair(self, tag: str, recv_argv: list[str], send_argv: list[str], port: int,
              server_first: bool) -> tuple[Proc, Proc]:
        d = self.dirs.new(tag)
        limit = time.monotonic() + self.seconds + 60
        if server_first:  # tcpserversink listens; the receiver connects
            send = Proc("send", [self.gst, "-m"] + send_argv, d)
            wait_listening(port, send)
            recv = Proc("recv", [self.gst, "-m"] + recv_argv, d)
        else:
            recv = Proc("recv", [self.gst, "-m"] + recv_argv, d)
            wait_listening(port, recv)
            send = Proc("send", [self.gst, "-m"] + send_argv, d)
        try:
            send.wait(limit)
            recv.wait(limit)
        finally:
            for p in (send, recv):
                if not p.done:
                    p.stop()
        send.check()
        recv.check()
        return send, recv

    def rdmavideo(self, tracks: bool) -> dict:
        port = free_port()
        recv = ["rdmasrc", "name=r", "address=127.0.0.1", f"port={port}", "transport=tcp",
                "is-live=true", "!", "queue", "!", "fakesink", "sync=false"]
        send = self._picture() + ["!", "rdmasink", "name=s", "host=127.0.0.1", f"port={port}",
                                  "transport=tcp", "mode=live", "sync=false"]
        # The tones are made either way, so the rows differ by sending them only.
        for n, hz in ((0, 1000), (1, 500)):
            if tracks:
                recv += [f"r.audio_{n}", "!", "queue", "!", "fakesink", "sync=false"]
                send += self._tone(hz) + ["!", f"s.audio_{n}"]
            else:
                send += self._tone(hz) + ["!", "fakesink", "sync=false"]
        send_p, recv_p = self._pair("tracks" if tracks else "picture", recv, send, port, False)
        frames = stats_frames(recv_p.stdout())
        if frames is None:
            raise CaseError("no rdmasrc-stats message at EOS")
        if tracks and recv_p.stdout().count("Got EOS") < 1:
            raise CaseError("the receiver did not reach EOS")
        return {"frames": frames, "send_cpu": send_p.cpu_seconds, "recv_cpu": recv_p.cpu_seconds}

    def matroska(self) -> dict:
        port = free_port()
        send = self._picture() + ["!", "queue", "!", "matroskamux", "name=m", "streamable=true",
                                  "!", "tcpserversink", "host=127.0.0.1", f"port={port}",
                                  "sync=false"]
        for hz in (1000, 500):
            send += self._tone(hz) + ["!", "queue", "!", "m."]
        recv = ["tcpclientsrc", "host=127.0.0.1", f"port={port}", "!", "matroskademux", "name=d",
                "d.video_0", "!", "queue", "!", "fakesink", "sync=false",
                "d.audio_0", "!", "queue", "!", "fakesink", "sync=false",
                "d.audio_1", "!", "queue", "!", "fakesink", "sync=false"]
        send_p, recv_p = self._pair("matroska", recv, send, port, True)
        return {"frames": None, "send_cpu": send_p.cpu_seconds, "recv_cpu": recv_p.cpu_seconds}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default=str(REPO_ROOT / "build"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--quick", action="store_true", help="one run of 3 s")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.seconds = 1, 3
    plugin = Path(args.build_dir).resolve() / "gst-plugin"
    if not (plugin / "libgstrdmavideo.so").exists():
        print(f"run_gst_audio_bench: no plugin in {plugin} (cmake --build {args.build_dir})",
              file=sys.stderr)
        return 1
    os.environ["GST_PLUGIN_PATH"] = str(plugin)
    runs: dict[str, list[dict]] = {PICTURE: [], TRACKS: [], MATROSKA: []}
    with tempfile.TemporaryDirectory(prefix="gst-audio-bench-") as tmp:
        bench = Bench(args.seconds, Path(tmp))
        try:
            for _ in range(args.runs):  # interleaved, so a busy moment falls on every row
                runs[PICTURE].append(bench.rdmavideo(False))
                runs[TRACKS].append(bench.rdmavideo(True))
                runs[MATROSKA].append(bench.matroska())
        except CaseError as e:
            print(f"run_gst_audio_bench: {e}", file=sys.stderr)
            return 1
    pictures = bench.frames

    def per_picture(row: str, key: str) -> float:
        return statistics.median(1000 * r[key] / pictures for r in runs[row])

    base = per_picture(PICTURE, "send_cpu") + per_picture(PICTURE, "recv_cpu")
    table, results = [], {}
    for row in (PICTURE, TRACKS, MATROSKA):
        send, recv = per_picture(row, "send_cpu"), per_picture(row, "recv_cpu")
        got = [r["frames"] for r in runs[row] if r["frames"] is not None]
        table.append([row, f"{statistics.median(got):.0f}" if got else "-", f"{send:.2f}",
                      f"{recv:.2f}", f"{send + recv:.2f}", f"{(send + recv) / base:.3f}x"])
        results[row] = {"pictures_received": got, "send_cpu_ms": send, "recv_cpu_ms": recv,
                        "runs": runs[row]}
    print(f"{WIDTH}x{HEIGHT} UYVY at {RATE} fps, {pictures} pictures a run, 2 tracks of 48 kHz "
          f"stereo F32; medians of {args.runs} runs; {os.cpu_count()} cores")
    print(text_table(["pipeline", "pictures got", "send CPU ms/pic", "recv CPU ms/pic",
                      "both ms/pic", "vs picture only"], table, right={1, 2, 3, 4, 5}))
    ratio = (per_picture(TRACKS, "send_cpu") + per_picture(TRACKS, "recv_cpu")) / base
    verdict = "met" if ratio <= TARGET else "not met"
    print(f"target: the tracks cost rdmavideo under {100 * (TARGET - 1):.0f}% more CPU a picture: "
          f"{100 * (ratio - 1):+.1f}%, {verdict}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
