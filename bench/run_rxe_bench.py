#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""rdmavideo over verbs against ib_write_bw, and against rdmavideo over TCP, in the Soft-RoCE lab.

Runs itself inside the lab (tests/rxe/run_in_vm.sh) unless already there. Between the same
two rxe devices (rxe1 -> rxe0, 10.99.0.2 -> 10.99.0.1) it moves one frame-sized message at a
time three ways and prints one table:

  ib_write_bw -R -s FRAME_BYTES   perftest's RDMA WRITE bandwidth at the frame size
  rdmavideo --transport verbs     frames RDMA-written into the receiver's ring
  rdmavideo --transport tcp       the same frames over TCP between the same addresses

With --live-fps (on by default) it also runs a live stream at a rate the lab carries, paced at
FPS frames a second, three ways, and prints a second table: perftest's ib_write_bw paced at
the same message rate (its software rate limiter), and rdmavideo --realtime over verbs and over
TCP (frames sent and dropped by cause, fps, the sender's latency p50/p99/max). This is the
verbs row of the live-tail comparison that bench/run_live_bench.py makes over TCP loopback.

Soft-RoCE under software CPU emulation moves tens of MB/s: only the ratios mean anything.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import REPO_ROOT, Proc, drops_text, stop_all, wait_for_port_line  # noqa: E402

SERVER, CLIENT = "10.99.0.1", "10.99.0.2"


def in_lab():
    return os.path.exists("/sys/class/infiniband/rxe0")


def frame_bytes(size, pix_fmt):
    w, h = (int(v) for v in size.split("x"))
    per_pixel = {"uyvy422": 2, "rgba": 4}[pix_fmt]
    return w * h * per_pixel


def ib_write_bw(size, iters, tx_depth, extra=()):
    common = ["-R", "-s", str(size), "-n", str(iters), "-t", str(tx_depth), "-F", "--report_gbits",
              *extra]
    server = subprocess.Popen(["ib_write_bw", "-d", "rxe0"] + common, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    # The server takes a moment to listen, longer on a busy machine: retry a refused client.
    for attempt in range(5):
        time.sleep(1.0 + attempt)
        client = subprocess.run(["ib_write_bw", "-d", "rxe1"] + common + [SERVER], capture_output=True,
                                text=True, timeout=600)
        if client.returncode == 0 or server.poll() is not None:
            break
    try:
        server.wait(timeout=120)
    except subprocess.TimeoutExpired:
        server.kill()
        raise RuntimeError("ib_write_bw server did not finish:\n" + client.stdout + client.stderr)
    # The result line: bytes, iterations, BW peak, BW average (Gb/s), MsgRate (Mpps).
    for line in client.stdout.splitlines():
        fields = line.split()
        if len(fields) >= 5 and fields[0] == str(size):
            return float(fields[3]) * 1e9 / 8, client.stdout
    raise RuntimeError("ib_write_bw printed no result line:\n" + client.stdout + client.stderr)


def rdmavideo(build, transport, size, pix_fmt, frames, tmp, live_fps=None):
    work = Path(tmp)
    tag = f"{transport}-live" if live_fps else transport
    recv_json = work / f"recv-{tag}.json"
    send_json = work / f"send-{tag}.json"
    live = ["--realtime", "-r", str(live_fps)] if live_fps else []
    recv = Proc(f"recv-{tag}", [f"{build}/receiver/rdmavideo-recv", "--listen", f"{SERVER}:0",
                                      "--transport", transport, "--quiet", "--stats-json", str(recv_json)], work)
    procs = [recv]
    try:
        port = wait_for_port_line(recv, 10, host=SERVER)
        send = Proc(f"send-{tag}", [f"{build}/sender/rdmavideo-send", "--connect", f"{SERVER}:{port}",
                                    "--transport", transport, "--testsrc", "-s", size, "--pix-fmt", pix_fmt,
                                    "--frames", str(frames), *live, "--quiet", "--stats-json", str(send_json)],
                    work)
        procs.append(send)
        send.wait(time.monotonic() + 900)
        recv.wait(time.monotonic() + 60)
    finally:
        stop_all(procs)
    if send.exit_code != 0 or recv.exit_code != 0:
        raise RuntimeError(f"rdmavideo over {transport} failed: {send.stderr()}")
    r = json.load(open(recv_json))
    if live_fps:
        s = json.load(open(send_json))
        return {"frames": s["frames"], "dropped": s["dropped"], "drops": s.get("drops", {}),
                "fps": r["fps"], "p50": s["latency_ms"]["p50"], "p99": s["latency_ms"]["p99"],
                "max": s["latency_ms"]["max"], "received": r["frames"]}
    if r["frames"] != frames:
        raise RuntimeError(f"rdmavideo over {transport}: {r['frames']} of {frames} frames")
    return r


def live_cases(args, size, tmp):
    """The live comparison: perftest paced at the stream's message rate, then rdmavideo live."""
    paced = ["--rate_limit", f"{args.live_fps:g}", "--rate_units", "p", "--rate_limit_type", "SW",
             "--burst_size", "1"]
    paced_bps, _ = ib_write_bw(size, args.live_frames, 8, paced)
    return {
        "ib_write_bw_paced_bytes_per_s": paced_bps,
        "verbs": rdmavideo(args.build_dir, "verbs", args.size, args.pix_fmt, args.live_frames, tmp,
                           args.live_fps),
        "tcp": rdmavideo(args.build_dir, "tcp", args.size, args.pix_fmt, args.live_frames, tmp,
                         args.live_fps),
    }


def print_live(args, size, live):
    need = size * args.live_fps
    print(f"\nLive: {args.live_frames} frames at {args.live_fps:g} fps ({need / 1e6:.1f} MB/s needed)")
    print(f"{'case':40} {'MB/s':>7} {'fps':>6} {'sent':>5} {'dropped':>16} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7}")
    ib = live["ib_write_bw_paced_bytes_per_s"]
    print(f"{'ib_write_bw -R -t 8, paced (SW limiter)':40} {ib / 1e6:7.1f} {ib / size:6.1f} {args.live_frames:5d} "
          f"{'-':>16} {'-':>7} {'-':>7} {'-':>7}")
    for name, key in (("rdmavideo --realtime --transport verbs", "verbs"),
                      ("rdmavideo --realtime --transport tcp", "tcp")):
        r = live[key]
        print(f"{name:40} {r['fps'] * size / 1e6:7.1f} {r['fps']:6.1f} {r['frames']:5d} {drops_text(r):>16} "
              f"{r['p50']:7.2f} {r['p99']:7.2f} {r['max']:7.2f}")
    print("perftest reports no per-message latency: its row says whether the lab carries the rate "
          "when paced; rdmavideo's latency is the sender's, a frame's due time to its end.")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build-dir", default=str(REPO_ROOT / "build"))
    p.add_argument("--frames", type=int, default=200)
    p.add_argument("-s", "--size", default="640x360")
    p.add_argument("--pix-fmt", default="uyvy422")
    p.add_argument("--live-fps", type=float, default=30.0,
                   help="the live comparison's frame rate (default 30; 0: leave it out)")
    p.add_argument("--live-frames", type=int, default=300, help="frames of each live case")
    p.add_argument("--json", help="write the results here")
    args = p.parse_args()
    if not in_lab():
        lab = str(REPO_ROOT / "tests" / "rxe" / "run_in_vm.sh")
        os.execv(lab, [lab, sys.executable, os.path.abspath(__file__)] + sys.argv[1:])

    size = frame_bytes(args.size, args.pix_fmt)
    with tempfile.TemporaryDirectory() as tmp:
        ib_bps, _ = ib_write_bw(size, args.frames, 128)
        ib8_bps, _ = ib_write_bw(size, args.frames, 8)
        verbs = rdmavideo(args.build_dir, "verbs", args.size, args.pix_fmt, args.frames, tmp)
        tcp = rdmavideo(args.build_dir, "tcp", args.size, args.pix_fmt, args.frames, tmp)
        live = live_cases(args, size, tmp) if args.live_fps > 0 else None
    ratio_base = max(ib_bps, ib8_bps)
    rows = [
        ("ib_write_bw -R -t 128 (default)", ib_bps / 1e6, None, None),
        ("ib_write_bw -R -t 8", ib8_bps / 1e6, None, None),
        ("rdmavideo --transport verbs", verbs["gbytes_per_s"] * 1e3, verbs["fps"], verbs["cpu_seconds"]),
        ("rdmavideo --transport tcp", tcp["gbytes_per_s"] * 1e3, tcp["fps"], tcp["cpu_seconds"]),
    ]
    print(f"Soft-RoCE lab, rxe1 -> rxe0, {args.frames} messages of one {args.size} {args.pix_fmt} frame "
          f"({size} bytes)")
    print(f"{'case':32} {'MB/s':>8} {'fps':>7} {'recv CPU s':>10} {'vs ib_write_bw':>15}")
    for name, mbps, fps, cpu in rows:
        print(f"{name:32} {mbps:8.1f} {fps if fps is not None else float('nan'):7.1f} "
              f"{cpu if cpu is not None else float('nan'):10.2f} {mbps / (ratio_base / 1e6):14.2f}x")
    # Judged against the better of the two perftest runs.
    best = max(ib_bps, ib8_bps)
    ratio = verbs["gbytes_per_s"] * 1e9 / best
    print(f"\nTarget: rdmavideo verbs >= 0.9x ib_write_bw (the better run): "
          f"{'PASS' if ratio >= 0.9 else 'FAIL'} ({ratio:.2f}x)")
    print("rdmavideo keeps at most one frame per ring slot in flight (8 by default); -t sets "
          "perftest's number of WRITEs in flight.")
    print("Soft-RoCE under software emulation: absolute numbers mean nothing, only the ratios.")
    if live:
        print_live(args, size, live)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"ib_write_bw_bytes_per_s": ib_bps, "ib_write_bw_t8_bytes_per_s": ib8_bps, "verbs": verbs, "tcp": tcp, "ratio": ratio,
                       "live": live}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
