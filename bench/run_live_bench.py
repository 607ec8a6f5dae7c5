#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The live 4K60 tail: rdmavideo-send --realtime into rdmavideo-recv over TCP loopback, beside
a plain paced socket sending the same bytes at the same rate (bench/paced_socket.cpp), runs
alternating in one go so that the machine's moods hit both.

Each round runs, in turn:
- the link's capacity: rdmavideo-tcp-pipe moving 60 frames' bytes as fast as it can (4K60 RGBA
  needs 1.99 GB/s; a round whose capacity is below that cannot carry 60 fps by any means);
- rdmavideo live, with the default lateness bound (4 frame periods), and with --trace, whose
  lines put every frame's time where it went (waking, filling, a credit, the write);
- rdmavideo live with the old rule, 2 frame periods (--max-lateness 2f): the before;
- the plain paced socket: a frame every period, one blocking send of the frame (a sendall),
  a reader draining into a ring of 8 frame buffers. It never drops; `late` counts the frames
  it began more than the same bound after they were due (the ones a live sender would have
  dropped);
- the same with rdmavideo's socket calls: the frame offered 4 MiB a send() call, and read by
  one recv(MSG_WAITALL) a frame (the plain socket at its best here).

Figures: frames sent and dropped (by cause), fps, the sender's latency (due to the end of the
write) p50/p99/max, the receiver's p99, CPU seconds per GB (both ends), and the share of the
machine's time its hypervisor stole meanwhile (/proc/stat). For rdmavideo also its threads'
time on a CPU and runnable but waiting for one (/proc/PID/task/*/schedstat). Then the ratio of the
tails (rdmavideo p99 / the better plain peer's p99 in the same round, target <= 1.5) and the drops (target 0), on the medians of
--repeat rounds and round by round. Exits 0 when every case ran, whatever the numbers.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import (REPO_ROOT, CaseError, Proc, drops_text, interrupt_on_sigterm,  # noqa: E402
                      percentile, stop_all, wait_all, wait_for_port_line, wait_idle)

WIDTH, HEIGHT, RATE = 3840, 2160, 60
FRAME_BYTES = WIDTH * HEIGHT * 4
BOUND_FRAMES = 4  # the sender's default --max-lateness
TARGET_TAIL = 1.5  # rdmavideo p99 / plain p99


def finish(procs: list[Proc], seconds: float) -> None:
    """benchlib's wait_all, and whatever still runs after a failure is stopped."""
    try:
        wait_all(procs, seconds)
    finally:
        stop_all(procs)


def capacity(build: Path, work: Path, tag: str) -> dict:
    tool = str(build / "bench/rdmavideo-tcp-pipe")
    listen = Proc(f"{tag}-cap-listen", [tool, "--listen", "0"], work)
    port = wait_for_port_line(listen)
    write = Proc(f"{tag}-cap-write", [tool, "--connect", f"127.0.0.1:{port}", "--bytes",
                                      str(60 * FRAME_BYTES)], work)
    finish([write, listen], 120)
    return {"gbytes_per_s": json.loads(listen.stdout().splitlines()[-1])["gbytes_per_s"]}


class SchedWatch:
    """Samples /proc/PID/task/*/schedstat of some processes every 100 ms while a case runs
    (the last sample of each thread is kept, so threads that ended count too), and the
    machine's steal time from /proc/stat: on-CPU time, time runnable but waiting for a CPU,
    and the rest of the wall time off the CPU (blocked: in a socket call, a sleep, a lock)."""

    def __init__(self, procs: dict[str, Proc]):
        self.procs = procs
        self.last: dict[str, dict[str, tuple[int, int]]] = {n: {} for n in procs}
        self.stop = threading.Event()
        self.steal0 = self._steal()
        self.t0 = time.monotonic()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    @staticmethod
    def _steal() -> tuple[int, int]:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
        return fields[7] if len(fields) > 7 else 0, sum(fields)

    def _run(self) -> None:
        while not self.stop.wait(0.1):
            for name, p in self.procs.items():
                for task in Path(f"/proc/{p.pid}/task").glob("*"):
                    try:
                        on, wait, _ = Path(task, "schedstat").read_text().split()
                    except (OSError, ValueError):
                        continue
                    self.last[name][task.name] = (int(on), int(wait))

    def finish(self) -> dict:
        self.stop.set()
        self.thread.join()
        wall = time.monotonic() - self.t0
        steal1 = self._steal()
        out = {"wall_s": wall, "steal_pct": 100.0 * (steal1[0] - self.steal0[0]) /
               max(1, steal1[1] - self.steal0[1])}
        for name, tasks in self.last.items():
            out[name] = {"on_cpu_s": sum(t[0] for t in tasks.values()) / 1e9,
                         "runqueue_s": sum(t[1] for t in tasks.values()) / 1e9,
                         "threads": len(tasks)}
        return out


def rdmavideo(build: Path, work: Path, tag: str, frames: int, bound: str | None,
              trace: bool) -> dict:
    recv_json, send_json, trace_file = (work / f"{tag}-recv.json", work / f"{tag}-send.json",
                                        work / f"{tag}-trace.jsonl")
    recv = Proc(f"{tag}-recv", [str(build / "receiver/rdmavideo-recv"), "--listen", "127.0.0.1:0",
                                "--transport", "tcp", "--quiet", "--stats-json", str(recv_json)],
                work)
    port = wait_for_port_line(recv)
    argv = [str(build / "sender/rdmavideo-send"), "--connect", f"127.0.0.1:{port}", "--transport",
            "tcp", "--testsrc", "-s", f"{WIDTH}x{HEIGHT}", "--pix-fmt", "rgba", "-r", str(RATE),
            "--realtime", "--frames", str(frames), "--quiet", "--stats-json", str(send_json)]
    if bound:
        argv += ["--max-lateness", bound]
    if trace:
        argv += ["--trace", str(trace_file)]
    send = Proc(f"{tag}-send", argv, work)
    watch = SchedWatch({"sender": send, "receiver": recv})
    finish([send, recv], 60 + frames / RATE * 4)
    sched = watch.finish()
    s, r = json.loads(send_json.read_text()), json.loads(recv_json.read_text())
    out = {"frames": s["frames"], "dropped": s["dropped"], "drops": s.get("drops", {}),
           "fps": s["frames"] / (frames / RATE), "p50": s["latency_ms"]["p50"],
           "p99": s["latency_ms"]["p99"], "max": s["latency_ms"]["max"],
           "recv_p99": r["latency_ms"]["p99"],
           "cpu_per_gb": (send.cpu_seconds + recv.cpu_seconds) / max(1e-9, s["bytes"] / 1e9),
           "sched": sched}
    if trace:
        out["stages"] = stages(trace_file)
    return out


def stages(trace_file: Path) -> dict:
    """Where the frames' time went, from the sender's trace: how late the pacing woke for a
    frame (the sender busy with the one before), the wait for a credit, and the write."""
    src, dst = {}, {}
    for line in trace_file.read_text().splitlines():
        j = json.loads(line)
        (dst if "dest" in j else src)[j["seq"]] = j
    woke = [s["woke"] - s["due"] for s in src.values()]
    credit = [d["credited"] - d["taken"] for d in dst.values()]
    write = [d["written"] - d["credited"] for d in dst.values() if "dropped" not in d]
    return {name: {"p50": percentile(v, 50), "p99": percentile(v, 99), "max": max(v, default=0)}
            for name, v in (("start_late", woke), ("credit_wait", credit), ("write", write))}


def plain(build: Path, work: Path, tag: str, frames: int, as_rdmavideo: bool = False) -> dict:
    tool = str(build / "bench/rdmavideo-paced-socket")
    listen = Proc(f"{tag}-plain-listen", [tool, "--listen", "0", "--frame-bytes", str(FRAME_BYTES)]
                  + (["--read", "waitall"] if as_rdmavideo else []), work)
    port = wait_for_port_line(listen)
    argv = [tool, "--connect", f"127.0.0.1:{port}", "--frame-bytes", str(FRAME_BYTES), "--rate",
            str(RATE), "--frames", str(frames), "--max-lateness-ms",
            f"{BOUND_FRAMES * 1000 / RATE:.3f}"]
    if as_rdmavideo:
        argv += ["--write-bytes", str(4 << 20)]
    send = Proc(f"{tag}-plain-send", argv, work)
    watch = SchedWatch({"sender": send, "receiver": listen})
    finish([send, listen], 60 + frames / RATE * 10)
    sched = watch.finish()
    s, r = json.loads(send.stdout().splitlines()[-1]), json.loads(listen.stdout().splitlines()[-1])
    return {"frames": s["frames"], "dropped": 0, "late": s["late"], "fps": s["fps"],
            "p50": s["latency_ms"]["p50"], "p99": s["latency_ms"]["p99"],
            "max": s["latency_ms"]["max"], "recv_p99": r["latency_ms"]["p99"],
            "cpu_per_gb": (send.cpu_seconds + listen.cpu_seconds) / (frames * FRAME_BYTES / 1e9),
            "sched": sched}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default=str(REPO_ROOT / "build"))
    ap.add_argument("--frames", type=int, default=600, help="frames a run (10 s at 60 fps)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds; the table gives medians")
    ap.add_argument("--quick", action="store_true", help="CI smoke: one round of 240 frames")
    ap.add_argument("--json", help="write every run's figures to this file")
    args = ap.parse_args()
    if args.quick:
        args.frames, args.repeat = 240, 1
    interrupt_on_sigterm()
    build = Path(args.build_dir)
    work = Path(tempfile.mkdtemp(prefix="rdmavideo-live-bench-"))
    names = ["rdmavideo --realtime", "rdmavideo --realtime, old 2f bound", "plain paced socket",
             "plain socket, rdmavideo's calls"]
    runs: dict[str, list[dict]] = {n: [] for n in names}
    caps: list[float] = []
    try:
        for round_ in range(args.repeat):
            wait_idle(10)
            caps.append(capacity(build, work, f"r{round_}")["gbytes_per_s"])
            wait_idle(10)
            runs[names[0]].append(rdmavideo(build, work, f"r{round_}-new", args.frames, None, True))
            wait_idle(10)
            runs[names[1]].append(rdmavideo(build, work, f"r{round_}-old", args.frames, "2f", False))
            wait_idle(10)
            runs[names[2]].append(plain(build, work, f"r{round_}", args.frames))
            wait_idle(10)
            runs[names[3]].append(plain(build, work, f"r{round_}-calls", args.frames, True))
    except CaseError as e:
        print(f"a case failed to run: {e}", file=sys.stderr)
        return 1
    print(f"{args.frames} frames of {WIDTH}x{HEIGHT} RGBA ({FRAME_BYTES / 1e6:.1f} MB) at {RATE} fps "
          f"over TCP loopback, {args.repeat} round(s); link capacity (a plain pipe as fast as it "
          f"can) {' '.join(f'{c:.2f}' for c in caps)} GB/s (60 fps needs "
          f"{FRAME_BYTES * RATE / 1e9:.2f})")
    head = f"{'case':36} {'sent':>5} {'dropped':>22} {'fps':>5} {'p50 ms':>7} {'p99 ms':>7} " \
           f"{'max ms':>7} {'recv p99':>8} {'CPU-s/GB':>8} {'steal':>6}"
    print(head)
    med = {}
    for n in names:
        rs = runs[n]
        m = {k: statistics.median(r[k] for r in rs) for k in
             ("frames", "fps", "p50", "p99", "max", "recv_p99", "cpu_per_gb", "dropped")}
        m["steal"] = statistics.median(r["sched"]["steal_pct"] for r in rs)
        med[n] = m
        for i, r in enumerate(rs):
            label = n if args.repeat == 1 else f"{n} #{i + 1}"
            print(f"{label:36} {r['frames']:5d} {drops_text(r):>22} {r['fps']:5.1f} {r['p50']:7.1f} "
                  f"{r['p99']:7.1f} {r['max']:7.1f} {r['recv_p99']:8.1f} {r['cpu_per_gb']:8.3f} "
                  f"{r['sched']['steal_pct']:5.1f}%")
        if args.repeat > 1:
            print(f"{n + ' (median)':36} {m['frames']:5.0f} {m['dropped']:>22.0f} {m['fps']:5.1f} "
                  f"{m['p50']:7.1f} {m['p99']:7.1f} {m['max']:7.1f} {m['recv_p99']:8.1f} "
                  f"{m['cpu_per_gb']:8.3f} {m['steal']:5.1f}%")
    st = [r["stages"] for r in runs[names[0]]]
    print("where rdmavideo's frames' time went (ms, its trace; medians over rounds):")
    for stage in ("start_late", "credit_wait", "write"):
        print(f"  {stage:12} p50 {statistics.median(s[stage]['p50'] for s in st):6.2f}  "
              f"p99 {statistics.median(s[stage]['p99'] for s in st):6.2f}  "
              f"max {statistics.median(s[stage]['max'] for s in st):6.2f}")
    print("rdmavideo's threads (medians over rounds): seconds on a CPU and runnable but waiting "
          "for one, of the run's wall time (the rest they were blocked: in the socket, asleep)")
    sc = [r["sched"] for r in runs[names[0]]]
    for who in ("sender", "receiver"):
        on = statistics.median(x[who]["on_cpu_s"] for x in sc)
        rq = statistics.median(x[who]["runqueue_s"] for x in sc)
        print(f"  {who:8} on CPU {on:5.2f} s, waiting for a CPU {rq:5.2f} s "
              f"({statistics.median(x[who]['threads'] for x in sc):.0f} threads) "
              f"in {statistics.median(x['wall_s'] for x in sc):5.2f} s")
    # Against the better of the two plain peers, round by round (the machine's mood is shared
    # within a round, not across rounds).
    best = [min(a["p99"], b["p99"]) for a, b in zip(runs[names[2]], runs[names[3]])]
    per_round = [r["p99"] / max(1e-9, b) for r, b in zip(runs[names[0]], best)]
    print(f"tail ratio, rdmavideo p99 / the better plain socket's p99: "
          f"{statistics.median(per_round):.2f} (target <= {TARGET_TAIL}); by round "
          f"{' '.join(f'{x:.2f}' for x in per_round)}")
    late = [min(a["late"], b["late"]) for a, b in zip(runs[names[2]], runs[names[3]])]
    print(f"rdmavideo drops: {med[names[0]]['dropped']:.0f} (target 0); with the old bound: "
          f"{med[names[1]]['dropped']:.0f}; the better plain socket's frames begun later than the "
          f"bound: {statistics.median(late):.0f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"capacity_gbytes_per_s": caps, "runs": runs},
                                              indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
