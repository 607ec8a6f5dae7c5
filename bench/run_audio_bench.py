#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Audio beside video, measured over TCP loopback in one run:

- the cost of audio: a live 1920x1080 UYVY 60 fps test pattern (rdmavideo-send --realtime)
  into rdmavideo-recv for --seconds, with and without an 8-channel 48 kHz float track beside
  it, runs alternating, each end pinned to a core of its own, median CPU of --repeat (at
  least 3). The track comes from the
  sender's own tone (--tone 1000 --tone-channels 8: the cost of carrying it), and from
  FFmpeg (--audio-f lavfi --audio-i anullsrc, 7.1, in 1024- and 4096-sample chunks: carrying
  plus an FFmpeg input's own work). Target: carrying adds under 2% CPU per stream (both
  ends, every process).
- sync: a --tone run of --sync-minutes (10 by default; the soak) recorded to .mkv (FFV1 and
  FLAC, 320x180 at 30 fps), every beep measured against its flash as heard
  (tests/support/av_sync.py): the distribution of the offsets, and of the A/V offset at
  arrival the receiver reports. Target: p99 within one frame period.

Prints one table and the verdicts; exits 0 when every case ran (whatever the numbers),
non-zero when one failed to run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import (  # noqa: E402  (the process helpers are shared)
    REPO_ROOT, CaseError, Proc, percentile, proc_cpu_seconds, wait_for_port_line, wait_idle)

sys.path.insert(0, str(REPO_ROOT / "tests/support"))
import av_sync  # noqa: E402

# Silence costs its source nothing, so the table shows what carrying 8 channels costs: in
# chunks of 1024 samples (21 ms, as OBS and most devices deliver them) and of 4096 (85 ms).
def eight_channels(chunk: int) -> str:
    return f"anullsrc=channel_layout=7.1:sample_rate=48000:nb_samples={chunk}"


CHUNKS = (1024, 4096)

# The cases: what the sender is given beside the picture, and the row's label.
CASES = {
    "video": ([], "video only"),
    "tone8": (["--tone", "1000", "--tone-channels", "8"], "video + 8 ch 48 kHz float, the sender's tone"),
    **{f"lavfi{c}": (["--audio-f", "lavfi", "--audio-i", eight_channels(c)],
                     f"video + 8 ch 48 kHz float from FFmpeg (lavfi), {c}-sample chunks") for c in CHUNKS},
}


WARMUP_S = 2.0  # CPU counts from here: opening inputs and loading libraries is no stream's cost


def pinned(cpu: int) -> list[str]:
    """Each end on a core of its own where there are two: the scheduler moving them between
    cores (a thousand times a run) otherwise makes runs of one case differ by 20%."""
    return ["taskset", "-c", str(cpu)] if (os.cpu_count() or 1) >= 2 and shutil.which("taskset") else []


def live_run(build: Path, work: Path, tag: str, seconds: float, audio: list[str]) -> dict:
    """CPU seconds of both ends after the warm-up of one live run, and what the receiver got."""
    stats = work / f"{tag}.json"
    recv = Proc(f"{tag}-recv", pinned(1) + [str(build / "receiver/rdmavideo-recv"), "--listen", "127.0.0.1:0",
                                "--transport", "tcp", "--quiet", "--stats-json", str(stats)], work)
    port = wait_for_port_line(recv)
    argv = pinned(0) + [str(build / "sender/rdmavideo-send"), "--connect", f"127.0.0.1:{port}", "--transport", "tcp",
            "--testsrc", "-s", "1920x1080", "-r", "60", "--pix-fmt", "uyvy422", "--realtime", "--duration",
            str(seconds), "--quiet"]
    argv += audio
    send = Proc(f"{tag}-send", argv, work)
    time.sleep(WARMUP_S)
    warm = proc_cpu_seconds(send.pid) + proc_cpu_seconds(recv.pid)
    deadline = time.monotonic() + seconds + 60
    send.wait(deadline)
    recv.wait(deadline)
    for p in (send, recv):
        p.check()
    summary = json.loads(stats.read_text())
    stream = summary["streams"][0]
    samples = sum(t["samples"] for t in stream.get("audio", []))
    return {"cpu": send.cpu_seconds + recv.cpu_seconds - warm, "frames": stream["frames"],
            "dropped": stream["dropped"], "audio_samples": samples}


def sync_run(build: Path, work: Path, minutes: float) -> dict:
    out = work / "sync.mkv"
    stats = work / "sync.json"
    recv = Proc("sync-recv", [str(build / "receiver/rdmavideo-recv"), "--listen", "127.0.0.1:0", "--transport",
                              "tcp", "--quiet", "--output", str(out), "--verify", "--stats-json", str(stats)], work)
    port = wait_for_port_line(recv)
    send = Proc("sync-send", [str(build / "sender/rdmavideo-send"), "--connect", f"127.0.0.1:{port}",
                              "--transport", "tcp", "--testsrc", "-s", "320x180", "-r", "30", "--pix-fmt",
                              "yuv420p", "--tone", "1000", "--realtime", "--duration", str(minutes * 60),
                              "--quiet"], work)
    deadline = time.monotonic() + minutes * 60 + 120
    send.wait(deadline)
    recv.wait(deadline)
    for p in (send, recv):
        p.check()
    m = av_sync.measure(str(out))
    track = json.loads(stats.read_text())["streams"][0]["audio"][0]
    offsets = [abs(o) for o in m["offsets_ms"]]
    return {"beeps": m["beeps"], "flashes": m["flashes"], "frame_ms": m["frame_ms"], "tone_hz": m["tone_hz"],
            "p50": percentile(offsets, 50), "p99": percentile(offsets, 99), "max": max(offsets, default=0.0),
            "video_s": m["video_s"], "audio_s": m["audio_s"], "arrival_last_ms": track["av_offset_ms"],
            "arrival_max_ms": track["av_offset_max_ms"], "gaps_filled_ms": track.get("gaps_filled_ms", 0.0)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default=str(REPO_ROOT / "build"))
    ap.add_argument("--seconds", type=float, default=20, help="length of each cost run")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sync-minutes", type=float, default=10, help="length of the sync run (0: skip it)")
    ap.add_argument("--quick", action="store_true", help="5 s cost runs, one each, a 1-minute sync run")
    ap.add_argument("--json", help="write every number here")
    args = ap.parse_args()
    if args.quick:
        args.seconds, args.repeat, args.sync_minutes = 5, 1, min(args.sync_minutes, 1)
    build = Path(args.build_dir)
    results: dict = {"cost": {key: [] for key in CASES}}
    with tempfile.TemporaryDirectory(prefix="rdmavideo-audio-bench-") as tmp:
        work = Path(tmp)
        try:
            for i in range(max(1, args.repeat)):
                for key, (audio, _) in CASES.items():
                    wait_idle(10)
                    results["cost"][key].append(live_run(build, work, f"{key}-{i}", args.seconds, audio))
            if args.sync_minutes > 0:
                wait_idle(10)
                results["sync"] = sync_run(build, work, args.sync_minutes)
        except CaseError as e:
            print(f"a case failed to run: {e}", file=sys.stderr)
            return 1
    plain = statistics.median(r["cpu"] for r in results["cost"]["video"])
    added = {key: (statistics.median(r["cpu"] for r in results["cost"][key]) - plain) / plain * 100
             if plain else 0.0 for key in CASES}
    print(f"\nAudio beside 1920x1080 UYVY at 60 fps, live over TCP loopback, {args.seconds:g} s a run, "
          f"median of {max(1, args.repeat)}")
    print(f"| case | CPU-s (both ends, after {WARMUP_S:g} s), median | runs' range | frames | dropped | "
          "audio samples |")
    print("|---|---:|---:|---:|---:|---:|")
    for key, (_, label) in CASES.items():
        runs = results["cost"][key]
        mid = sorted(runs, key=lambda r: r["cpu"])[len(runs) // 2]
        extra = f" ({added[key]:+.1f}%)" if key != "video" else ""
        cpus = [r["cpu"] for r in runs]
        print(f"| {label} | {statistics.median(cpus):.2f}{extra} | {min(cpus):.2f}..{max(cpus):.2f} | "
              f"{mid['frames']} | {mid['dropped']} | {mid['audio_samples']} |")
    print(f"carrying 8 channels (the sender's tone) adds {added['tone8']:+.2f}% CPU per stream "
          f"(target: under 2%): {'PASS' if added['tone8'] < 2 else 'FAIL'}")
    for c in CHUNKS:
        print(f"from FFmpeg in {c}-sample chunks, its input's work included: {added[f'lavfi{c}']:+.2f}%")
    if "sync" in results:
        s = results["sync"]
        print(f"\nSync: --tone 1000 for {args.sync_minutes:g} min, 320x180 at 30 fps into .mkv (FFV1 + FLAC), "
              "beep minus flash as heard")
        print("| beeps | flashes | p50 ms | p99 ms | max ms | frame ms | tone Hz | video s | audio s | "
              "arrival offset last / max ms | gaps filled ms |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        print(f"| {s['beeps']} | {s['flashes']} | {s['p50']:.3f} | {s['p99']:.3f} | {s['max']:.3f} | "
              f"{s['frame_ms']:.3f} | {s['tone_hz']:.1f} | {s['video_s']:.3f} | {s['audio_s']:.3f} | "
              f"{s['arrival_last_ms']:.2f} / {s['arrival_max_ms']:.2f} | {s['gaps_filled_ms']:.1f} |")
        ok = s["p99"] <= s["frame_ms"] and s["beeps"] == s["flashes"]
        print(f"\np99 within one frame period ({s['frame_ms']:.3f} ms): {'PASS' if ok else 'FAIL'}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
