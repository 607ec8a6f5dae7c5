#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""GPU memory, measured on a machine with a GPU, in one table (docs/gpu.md records runs):

(a) 3840x2160 RGBA frames GPU -> GPU over TCP loopback (the staged rung on both ends) next
    to host -> host over the same loopback, in the same run: the staging should hide behind
    the network (target: at least 0.9x).
(b) the staging engine alone (bench/gpu_staging.cpp: device -> pinned slot -> device, double
    buffered) next to serial D2H+H2D copies of the same frames (target: at least 1.0x), and
    how close it comes to one direction alone.
(c) GPU copies per frame on each end and CPU seconds per GB of both ends, from each end's
    --stats-json.

Exits 1, saying why, where there is no GPU (the programs' own one-line error).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import CaseError, Proc, free_port, stop_all, wait_listening  # noqa: E402

WIDTH, HEIGHT = 3840, 2160


def stream(build: Path, memory: str, frames: int, tmp: Path) -> dict:
    """One stream of `frames` test-pattern frames, both ends in `memory`; both summaries."""
    recv_json, send_json = tmp / f"recv-{memory}.json", tmp / f"send-{memory}.json"
    procs: list[Proc] = []
    try:
        port = free_port()
        recv = Proc(f"rdmavideo-recv-{memory}", [
            str(build / "receiver/rdmavideo-recv"), "--listen", f"127.0.0.1:{port}", "--transport", "tcp",
            "--frames", str(frames), "--memory", memory, "--quiet", "--stats-json", str(recv_json)], tmp)
        procs.append(recv)
        wait_listening(port, recv, 30)  # setting up GPU memory may come first
        send = Proc(f"rdmavideo-send-{memory}", [
            str(build / "sender/rdmavideo-send"), "--connect", f"127.0.0.1:{port}", "--transport", "tcp",
            "--testsrc", "-s", f"{WIDTH}x{HEIGHT}", "--pix-fmt", "rgba", "--frames", str(frames),
            "--memory", memory, "--quiet", "--stats-json", str(send_json)], tmp)
        procs.append(send)
        send.wait(time.monotonic() + 600)
        send.check()
        recv.wait(time.monotonic() + 120)
        recv.check()
    finally:
        stop_all(procs)
    return {"send": json.loads(send_json.read_text()), "recv": json.loads(recv_json.read_text())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default="build", type=Path)
    parser.add_argument("--frames", type=int, default=600)
    parser.add_argument("--json", type=Path, help="write every figure here too")
    args = parser.parse_args()
    build = args.build_dir.resolve()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        try:
            host = stream(build, "host", args.frames, tmp)
            gpu = stream(build, "cuda", args.frames, tmp)
        except CaseError as e:
            print(f"run_gpu_bench: {e}", file=sys.stderr)
            return 1
        staging_json = tmp / "staging.json"
        engine = subprocess.run([str(build / "bench/rdmavideo-gpu-staging"), "--json", str(staging_json)],
                                capture_output=True, text=True)
        if engine.returncode != 0:
            print(f"run_gpu_bench: {engine.stderr.strip()}", file=sys.stderr)
            return 1
        staging = json.loads(staging_json.read_text())

    def rate(run: dict) -> float:
        return run["recv"]["gbytes_per_s"]

    def cpu_per_gb(run: dict) -> float:
        gb = run["recv"]["bytes"] / 1e9
        return (run["send"]["cpu_seconds"] + run["recv"]["cpu_seconds"]) / gb if gb else 0.0

    print(f"(a) {WIDTH}x{HEIGHT} RGBA over TCP loopback, {args.frames} frames, no drops")
    print("| ends          | GB/s  | vs host | copies/frame send | copies/frame recv | CPU-s/GB both |")
    print("|---------------|-------|---------|-------------------|-------------------|---------------|")
    for label, run in (("host -> host", host), ("GPU -> GPU", gpu)):
        print(f"| {label:13} | {rate(run):5.2f} | {rate(run) / rate(host):6.2f}x "
              f"| {run['send'].get('gpu_copies_per_frame', 0):17.2f} | {run['recv'].get('gpu_copies_per_frame', 0):17.2f} "
              f"| {cpu_per_gb(run):13.3f} |")
    print(f"    GPU path: sender {gpu['send'].get('gpu_path')}, receiver {gpu['recv'].get('gpu_path')}")
    cases = {c["name"]: c["gbytes_per_s"] for c in staging["cases"]}
    serial = cases["serial D2H then H2D"]
    one_way = min(cases["D2H alone"], cases["H2D alone"])
    print(f"\n(b) staging engine alone on {staging['device']}, {staging['frame_bytes']}-byte frames")
    print("| case                    | GB/s  | vs serial | vs one direction |")
    print("|-------------------------|-------|-----------|------------------|")
    for name, value in cases.items():
        print(f"| {name:23} | {value:5.2f} | {value / serial:8.2f}x | {value / one_way:15.2f}x |")
    ok_a = rate(gpu) >= 0.9 * rate(host)
    ok_b = cases["staged, double buffered"] >= serial
    print(f"\ntargets: (a) GPU->GPU >= 0.9x host->host: {'met' if ok_a else 'NOT met'}; "
          f"(b) staged >= 1.0x serial: {'met' if ok_b else 'NOT met'}")
    if args.json:
        args.json.write_text(json.dumps({"host": host, "gpu": gpu, "staging": staging}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
