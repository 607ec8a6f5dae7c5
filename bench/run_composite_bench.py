#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Four live senders into one 2x2 canvas, composited by rdmavideo-recv --composite and, in the
same run from the same four kinds of sender, by GStreamer's compositor behind four rdmasrc
elements; one table: output frames, whether the canvas held real time, and the compositing
process's CPU per output frame (its user + system time from os.wait4, the whole process:
receiving, copying, scaling, composing). The senders (rdmavideo-send --testsrc --realtime)
and their CPU are the same in both cases and left out.

Both canvases are discarded (no encoder), so what is measured is composition. With
--memory cuda (or both) the receiver's rings and canvas are in GPU memory and the canvas is
drawn by the library's kernels (a row of its own; on a GPU machine without GStreamer,
--peer none leaves the compositor out). Exits 0 when every case ran, whatever the numbers; 1
when one could not. See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import CaseError, Proc, free_port, wait_for_port_line, wait_idle, wait_listening  # noqa: E402


def senders(build: Path, ports: list[int], size: str, rate: int, seconds: float, pix_fmt: str,
            work: Path) -> list[Proc]:
    return [Proc(f"send{i}", [str(build / "sender/rdmavideo-send"), "--connect", f"127.0.0.1:{port}", "--transport",
                              "tcp", "--name", f"cam{i + 1}", "--testsrc", "-s", size, "-r", str(rate), "--pix-fmt",
                              pix_fmt, "--realtime", "--duration", str(seconds), "--quiet"], work)
            for i, port in enumerate(ports)]


def ours(build: Path, args, work: Path, memory: str = "host") -> dict:
    w, h = args.canvas
    recv = Proc("recv", [str(build / "receiver/rdmavideo-recv"), "--listen", "127.0.0.1:0", "--transport", "tcp",
                         "--composite", "grid", "--canvas", f"{w}x{h}@{args.rate}", "--pix-fmt", args.canvas_fmt,
                         "--memory", memory, "--max-streams", "4", "--quiet", "--stats-json",
                         str(work / "recv.json")], work)
    port = wait_for_port_line(recv)
    send = senders(build, [port] * 4, args.size, args.rate, args.seconds, args.pix_fmt, work)
    for s in send:
        s.wait(time.monotonic() + args.seconds + 30)
    recv.wait(time.monotonic() + 30)
    recv.check()
    canvas = json.loads((work / "recv.json").read_text())["canvas"]
    # The canvas ran from the first frame to the receiver's stop: the senders' time, and the
    # moments the last stream took to end.
    if canvas["memory"] != ("host" if memory == "host" else "cuda:0"):
        raise CaseError(f"the canvas was in {canvas['memory']} memory, not {memory}")
    return {"frames": canvas["frames"], "late": canvas["late"], "cpu": recv.cpu_seconds,
            "seconds": recv.end - recv.start}


def gstreamer(build: Path, args, work: Path) -> dict:
    w, h = args.canvas
    tw, th = w // 2, h // 2
    ports = [free_port() for _ in range(4)]
    pads = " ".join(f"sink_{i}::xpos={(i % 2) * tw} sink_{i}::ypos={(i // 2) * th} sink_{i}::width={tw} "
                    f"sink_{i}::height={th}" for i in range(4))
    pipeline = (f"compositor name=mix {pads} ! video/x-raw,format={args.canvas_fmt.upper()},width={w},height={h},"
                f"framerate={args.rate}/1 ! fpsdisplaysink video-sink=fakesink text-overlay=false sync=false "
                + " ".join(f"rdmasrc address=127.0.0.1 port={p} is-live=true ! mix.sink_{i}" for i, p in enumerate(ports)))
    env_plugin = str(build / "gst-plugin")
    os.environ["GST_PLUGIN_PATH"] = env_plugin
    os.environ.setdefault("GST_REGISTRY_1_0", str(work / "registry.bin"))
    gst = Proc("gst", ["gst-launch-1.0", "-v", "-e"] + pipeline.split(), work)
    for p in ports:
        wait_listening(p, gst, 20)
    send = senders(build, ports, args.size, args.rate, args.seconds, args.pix_fmt, work)
    for s in send:
        s.wait(time.monotonic() + args.seconds + 30)
    gst.wait(time.monotonic() + 30)
    gst.check()
    rendered = re.findall(r"rendered: (\d+), dropped: (\d+)", gst.stdout())
    if not rendered:
        raise CaseError("gst-launch-1.0: fpsdisplaysink reported no frames")
    frames, dropped = (int(v) for v in rendered[-1])
    return {"frames": frames, "late": dropped, "cpu": gst.cpu_seconds, "seconds": gst.end - gst.start}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default="build", type=Path)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--size", default="1920x1080", help="each sender's frames")
    parser.add_argument("--rate", type=int, default=60, help="the senders' and the canvas's rate")
    parser.add_argument("--pix-fmt", default="uyvy422", help="the senders' format")
    parser.add_argument("--canvas", default="1920x1080")
    parser.add_argument("--canvas-fmt", default="nv12")
    parser.add_argument("--memory", choices=("host", "cuda", "both"), default="host",
                        help="where the receiver's rings and canvas are (cuda: the GPU canvas)")
    parser.add_argument("--peer", choices=("gstreamer", "none"), default="gstreamer")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    args.canvas = tuple(int(v) for v in args.canvas.split("x"))
    build = args.build_dir.resolve()
    rows = {}
    cases = []
    if args.memory in ("host", "both"):
        cases.append(("rdmavideo-recv --composite", ours))
    if args.memory in ("cuda", "both"):
        cases.append(("rdmavideo-recv --composite --memory cuda", lambda b, a, w: ours(b, a, w, "cuda")))
    if args.peer == "gstreamer":
        cases.append(("GStreamer compositor (4 rdmasrc)", gstreamer))
    for name, case in cases:
        wait_idle(10)
        with tempfile.TemporaryDirectory() as tmp:
            try:
                rows[name] = case(build, args, Path(tmp))
            except CaseError as e:
                print(f"{name}: {e}", file=sys.stderr)
                return 1
    expected = args.seconds * args.rate
    print(f"four {args.size} {args.pix_fmt} senders at {args.rate} fps into a {args.canvas[0]}x{args.canvas[1]} "
          f"{args.canvas_fmt} canvas, {args.seconds:.0f} s, {os.cpu_count()} CPUs")
    print("| compositor | canvas frames | of real time | late / dropped | CPU-s | CPU ms per canvas frame |")
    print("|---|---|---|---|---|---|")
    for name, r in rows.items():
        per = 1000 * r["cpu"] / max(1, r["frames"])
        print(f"| {name} | {r['frames']} | {r['frames'] / expected:.2f} | {r['late']} | {r['cpu']:.2f} | {per:.2f} |")
    def per_frame(r: dict) -> float:
        return r["cpu"] / max(1, r["frames"])
    peer = rows.get("GStreamer compositor (4 rdmasrc)")
    for name, r in rows.items():
        if r is peer:
            continue
        if peer:
            ratio = per_frame(r) / max(1e-9, per_frame(peer))
            print(f"CPU per canvas frame, {name} against GStreamer's compositor: {ratio:.2f}x "
                  f"({'at most' if ratio <= 1 else 'more than'} the compositor's)")
    if "rdmavideo-recv --composite" in rows and "rdmavideo-recv --composite --memory cuda" in rows:
        ratio = per_frame(rows["rdmavideo-recv --composite --memory cuda"]) / max(
            1e-9, per_frame(rows["rdmavideo-recv --composite"]))
        print(f"CPU per canvas frame, the GPU canvas against the host canvas: {ratio:.2f}x")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
