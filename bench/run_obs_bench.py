#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""OBS's render-to-send cost, measured in libobs itself (tests/obs/obs_host: libobs under Xvfb,
Mesa rendering OBS's OpenGL in software) at 1920x1080 and 3840x2160, NV12 at 60 fps, with a
colour source and a media source (a 320x180 clip with sound) on the canvas. Three cases, run
alternating, --repeat times each:

  render     no output: what OBS's rendering of the canvas costs on its own (the baseline)
  raw-null   a raw output whose callbacks do nothing: what OBS spends making raw frames for
             any output (reading the canvas back and converting it, in software here)
  rdmavideo  rdmavideo_output to an rdmavideo-recv that discards the frames, over TCP
  obs-ffv1   OBS's own FFmpeg output (obs-ffmpeg's ffmpeg_output) writing the same canvas
             losslessly (FFV1 in Matroska, PCM audio) to a file: the peer

For each: frames OBS rendered and handed to the output, the time OBS's video thread spent
inside the output's raw video callback per frame (ours only: the FFmpeg output's is its own
business), and the OBS process's CPU per rendered frame, less the render case's: what the
output adds. Mesa on two cores cannot render 4K60 in real time, so the table reports cost
per frame, not fps; `lagged` is OBS's count of render ticks it missed.

The receiver's CPU is reported apart: in use it is another machine's.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import REPO_ROOT, CaseError, Proc, wait_for_port_line  # noqa: E402

sys.path.insert(0, str(REPO_ROOT / "tests/support"))
from media_rig import VirtualScreen, flash_clip  # noqa: E402  (the tests' screen and clip)


def obs_case(case: str, size: str, seconds: float, build: Path, work: Path, clip: Path, display: str) -> dict:
    host = build / "tests/obs/obs_host"
    plugin = build / "obs-plugin/rdmavideo-obs.so"
    args = [str(host), "--plugin", str(plugin), "--size", size, "--fps", "60/1", "--seconds", str(seconds),
            "--clip-a", str(clip), "--tracks", "1"]
    recv = None
    if case == "rdmavideo":
        recv = Proc(f"recv-{case}-{size}", [str(build / "receiver/rdmavideo-recv"), "--listen", "127.0.0.1:0"],
                    work)
        port = wait_for_port_line(recv, 30)
        args += ["--destinations", f"127.0.0.1:{port}"]
    else:
        args += ["--no-rdmavideo"]
    if case == "raw-null":
        args += ["--null-output"]
    if case == "obs-ffv1":
        out = work / f"obs-own-{size}.mkv"
        args += ["--record", str(out), "--record-encoder", "ffv1", "--abandon-recording"]
    env = dict(os.environ, DISPLAY=display)
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=seconds + 120)
    m = re.search(r'(\{"frames".*\})', done.stdout)
    if done.returncode != 0 or not m:
        raise CaseError(f"{case} {size}: obs_host exited {done.returncode}: {done.stderr[-400:]}")
    r = json.loads(m.group(1))
    if case == "obs-ffv1":
        (work / f"obs-own-{size}.mkv").unlink(missing_ok=True)
    if recv:
        recv.wait(time.monotonic() + 30)
        r["recv_cpu_s"] = recv.cpu_seconds
    return r


SATURATED = 1.8  # cores the render case uses, of 2, beyond which what an output adds is not seen


def print_table(runs: dict, sizes: list[str], seconds: float, repeat: int) -> None:
    def med(size: str, case: str, f) -> float:
        return statistics.median(f(r) for r in runs[(size, case)])

    print(f"OBS render-to-send cost, NV12 at 60 fps, {seconds:.0f} s runs, medians of {repeat} "
          f"(libobs, Mesa llvmpipe, {os.cpu_count()} cores)\n")
    print("| canvas | output | frames OBS put out | frames the output took | in OBS's video callback, "
          "ms/frame (wall / CPU) | OBS process, cores | CPU the output adds, ms per frame it took "
          "| receiver CPU, ms/frame |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for size in sizes:
        base_cores = med(size, "render", lambda r: r["cpu_s"] / seconds)
        for case in ("render", "raw-null", "rdmavideo", "obs-ffv1"):
            out = med(size, case, lambda r: r["rendered"])
            took = med(size, case, lambda r: (r["frames"] - r["dropped"] if case == "rdmavideo"
                                              else r["null_frames"] if case == "raw-null" else r["recorded"]))
            cores = med(size, case, lambda r: r["cpu_s"] / seconds)
            callback = (f"{med(size, case, lambda r: r['callback_ns'] / 1e6 / max(1, r['handed'])):.2f} / "
                        f"{med(size, case, lambda r: r['callback_cpu_ns'] / 1e6 / max(1, r['handed'])):.2f}"
                        if case == "rdmavideo" else "-")
            if case == "render":
                added = "-"
            elif base_cores > SATURATED:
                added = "not seen: rendering alone takes the machine"
            else:
                added = f"{med(size, case, lambda r: 1000 * (r['cpu_s'] - base_cores * seconds)) / max(1, took):.2f}"
            recv = (f"{med(size, case, lambda r: 1000 * r['recv_cpu_s'] / max(1, r['frames'])):.2f}"
                    if case == "rdmavideo" else "-")
            print(f"| {size} | {case} | {out:.0f} | {took:.0f} | {callback} | {cores:.2f} | {added} | {recv} |")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build-dir", default="build")
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--sizes", default="1920x1080,3840x2160")
    p.add_argument("--json", help="also write every run's numbers here")
    a = p.parse_args()
    build = (REPO_ROOT / a.build_dir).resolve()
    for tool in ("Xvfb", "ffmpeg"):
        if shutil.which(tool) is None:
            print(f"{tool} not found", file=sys.stderr)
            return 2
    work = Path(tempfile.mkdtemp(prefix="obs-bench-"))
    screen = VirtualScreen()
    clip = work / "clip.mp4"
    flash_clip(clip)
    cases = ("render", "raw-null", "rdmavideo", "obs-ffv1")
    runs: dict[tuple[str, str], list[dict]] = {}
    try:
        for size in a.sizes.split(","):
            for _ in range(a.repeat):
                for case in cases:
                    runs.setdefault((size, case), []).append(obs_case(case, size, a.seconds, build, work, clip,
                                                                       screen.display))
    finally:
        screen.close()
        shutil.rmtree(work, ignore_errors=True)

    if a.json:
        Path(a.json).write_text(json.dumps({f"{k[0]} {k[1]}": v for k, v in runs.items()}, indent=1))
    print_table(runs, a.sizes.split(","), a.seconds, a.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
