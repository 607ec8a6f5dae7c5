#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""NMOS at scale, in one run on this machine:

1. Nodes: 100 rdmavideo-send --nmos and 25 rdmavideo-recv --nmos (defaults) registering with
   one registry (a Registration API of this bench's own, on 127.0.0.1) and heartbeating for
   --duration seconds (600 for the issue's ten minutes): per role, the time from a process's
   start to its last resource registered, its CPU and resident memory, the heartbeats'
   intervals and any missed (a gap over 7 s), and the clean stop (every resource deleted).
2. Activations: a controller (this script) issuing --activations IS-05 activations to one
   sender node: enable with a receiver's address (immediate), wait for the stream to start in
   rdmavideo-recv, disable, wait for it to end; p50/p99/max of the PATCH, of the time to the
   stream's start and to its end.

No peer is run beside it: no other NMOS node is packaged for this machine. Exits 0 when every
case ran, whatever the numbers.
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import re
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import CaseError, Proc, free_port, percentile, text_table  # noqa: E402

NO_DNSSD = {"DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent"}  # the registry is configured


class Registry:
    """A Registration API v1.3: resources by node, heartbeats by node, deletes counted."""

    def __init__(self):
        self.lock = threading.Lock()
        self.resources: dict[tuple[str, str], dict] = {}
        self.node_of: dict[str, str] = {}           # resource id -> node id
        self.first_post: dict[str, float] = {}      # node id -> time of its first POST
        self.last_post: dict[str, float] = {}       # node id -> time of its latest POST
        self.labels: dict[str, str] = {}            # node id -> label
        self.beats: dict[str, list[float]] = {}
        self.deletes = 0
        reg = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def reply(self, code, body=b""):
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                now = time.monotonic()
                base = "/x-nmos/registration/v1.3"
                with reg.lock:
                    if self.path == base + "/resource":
                        r = json.loads(body)
                        kind, data = r["type"], r["data"]
                        node = data["id"] if kind == "node" else reg.node_of.get(
                            data.get("device_id") or data.get("node_id"), "")
                        if kind == "node":
                            reg.labels[node] = data["label"]
                        reg.node_of[data["id"]] = node
                        code = 200 if (kind, data["id"]) in reg.resources else 201
                        reg.resources[(kind, data["id"])] = data
                        reg.first_post.setdefault(node, now)
                        reg.last_post[node] = now
                        return self.reply(code, json.dumps(data).encode())
                    m = re.match(base + r"/health/nodes/(.+)$", self.path)
                    if m:
                        reg.beats.setdefault(m.group(1), []).append(now)
                        ok = ("node", m.group(1)) in reg.resources
                        return self.reply(200 if ok else 404, b"{}")
                self.reply(404, b"{}")

            def do_DELETE(self):
                m = re.match(r"/x-nmos/registration/v1.3/resource/(\w+)s/(.+)$", self.path)
                with reg.lock:
                    if m and reg.resources.pop((m.group(1), m.group(2)), None) is not None:
                        reg.deletes += 1
                self.reply(204)

        # Every node connects at once at the start: a backlog for all (socketserver's is 5,
        # and a connection dropped from it waits a second for its retry).
        http.server.ThreadingHTTPServer.request_queue_size = 1024
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def scale(build: Path, senders: int, receivers: int, duration: float, work: Path) -> list[list[str]]:
    reg = Registry()
    procs: dict[str, tuple[str, Proc]] = {}  # label -> (role, process)
    env_backup = dict(os.environ)
    os.environ.update(NO_DNSSD)
    try:
        for i in range(receivers):
            label = f"rx-{i}"
            procs[label] = ("receiver", Proc(label, [
                str(build / "receiver" / "rdmavideo-recv"), "--listen", "127.0.0.1:0", "--serve",
                "--quiet", "--name", label, "--nmos", "127.0.0.1:0", "--nmos-registry", reg.url],
                work))
        for i in range(senders):
            label = f"tx-{i}"
            procs[label] = ("sender", Proc(label, [
                str(build / "sender" / "rdmavideo-send"), "--testsrc", "-s", "64x64", "--name",
                label, "--nmos", "127.0.0.1:0", "--nmos-registry", reg.url], work))
        started = {label: p.start for label, (_, p) in procs.items()}
        want = {"sender": 5, "receiver": 3}  # node, device, source, flow, sender / receiver
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with reg.lock:
                per_node = {}
                for (kind, rid), data in reg.resources.items():
                    per_node[reg.node_of.get(rid, "")] = per_node.get(reg.node_of.get(rid, ""), 0) + 1
                done = sum(1 for n, c in per_node.items() if n in reg.labels and
                           c >= want["sender" if reg.labels[n].startswith("tx-") else "receiver"])
            if done == len(procs):
                break
            if any(p.done for _, p in procs.values()):
                bad = [p for _, p in procs.values() if p.done][0]
                raise CaseError(f"{bad.name} exited: {bad.stderr()[-300:]}")
            time.sleep(0.1)
        with reg.lock:
            registered = {reg.labels[n]: reg.last_post[n] - started[reg.labels[n]]
                          for n in reg.labels if reg.labels[n] in started}
            posting = {reg.labels[n]: reg.last_post[n] - reg.first_post[n] for n in reg.labels}
        cpu0 = {label: cpu_s(p.pid) for label, (_, p) in procs.items()}
        t0 = time.monotonic()
        time.sleep(duration)
        held = time.monotonic() - t0
        cpu = {label: (cpu_s(p.pid) - cpu0[label]) / held * 100 for label, (_, p) in procs.items()}
        rss = {label: rss_kib(p.pid) / 1024 for label, (_, p) in procs.items()}
        with reg.lock:
            beats = {reg.labels[n]: b for n, b in reg.beats.items() if n in reg.labels}
            resources_before = len(reg.resources)
        stop0 = time.monotonic()
        for _, p in procs.values():
            p.send_signal(15)
        for _, p in procs.values():
            p.join(30)
        stop_s = time.monotonic() - stop0
        with reg.lock:
            left = len(reg.resources)
    finally:
        os.environ.clear()
        os.environ.update(env_backup)
        for _, p in procs.values():
            p.stop(grace=1)
        reg.close()
    rows = []
    for role in ("sender", "receiver"):
        labels = [label for label, (r, _) in procs.items() if r == role]
        if not labels:
            continue
        reg_ms = [registered.get(label, float("nan")) * 1000 for label in labels]
        post_ms = [posting.get(label, float("nan")) * 1000 for label in labels]
        intervals, missed = [], 0
        for label in labels:
            b = [t for t in beats.get(label, []) if t >= t0]
            gaps = [y - x for x, y in zip(b, b[1:])]
            intervals += gaps
            missed += sum(1 for g in gaps if g > 7)
        rows.append([
            role, str(len(labels)),
            f"{percentile(reg_ms, 50):.0f} / {max(reg_ms):.0f}",
            f"{percentile(post_ms, 50):.0f} / {max(post_ms):.0f}",
            f"{percentile([cpu[x] for x in labels], 50):.2f} / {max(cpu[x] for x in labels):.2f}",
            f"{percentile([rss[x] for x in labels], 50):.1f} / {max(rss[x] for x in labels):.1f}",
            f"{percentile(intervals, 50):.2f} / {max(intervals) if intervals else 0:.2f}",
            str(missed)])
    print(f"\nNodes: {senders} senders + {receivers} receivers registered with one registry, "
          f"held {held:.0f} s; {resources_before} resources registered; a clean stop of all "
          f"took {stop_s:.1f} s and left {left} in the registry\n")
    print(text_table(["role", "nodes", "start to registered ms p50/max",
                      "first to last POST ms p50/max", "CPU % p50/max", "RSS MiB p50/max",
                      "heartbeat s p50/max", "missed"], rows, {1, 7}))
    return rows


def patch(url: str, body: dict) -> tuple[int, float]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="PATCH",
                                 headers={"Content-Type": "application/json"})
    t = time.monotonic()
    with urllib.request.urlopen(req, timeout=10) as r:
        r.read()
        return r.status, time.monotonic() - t


class Tail:
    """A process's stderr read as it grows."""

    def __init__(self, path: Path):
        self.f = open(path, errors="replace")
        self.text = ""

    def wait(self, pattern: str, timeout: float) -> float:
        deadline = time.monotonic() + timeout
        compiled = re.compile(pattern)
        while time.monotonic() < deadline:
            self.text += self.f.read()
            m = compiled.search(self.text)
            if m:
                self.text = self.text[m.end():]
                return time.monotonic()
            time.sleep(0.001)
        raise CaseError(f"no /{pattern}/ within {timeout} s")


def activations(build: Path, count: int, work: Path) -> None:
    port = free_port()
    os.environ.update(NO_DNSSD)
    recv = Proc("recv", [str(build / "receiver" / "rdmavideo-recv"), "--listen", f"127.0.0.1:{port}",
                         "--serve", "--quiet"], work)
    send = Proc("send", [str(build / "sender" / "rdmavideo-send"), "--testsrc", "-s", "1920x1080",
                         "-r", "60", "--realtime", "--nmos", "127.0.0.1:0", "--name", "bench"], work)
    try:
        node = re.search(r"NMOS node at http://([^/]+)/", _wait_text(send, r"NMOS node at http://[^/]+/"))
        api = f"http://{node.group(1)}/x-nmos/connection/v1.1/single/senders/"
        with urllib.request.urlopen(api) as r:
            sid = json.load(r)[0].rstrip("/")
        staged = api + sid + "/staged"
        tail = Tail(recv.err_path)
        patch_ms, start_ms, stop_ms = [], [], []
        for k in range(1, count + 1):
            t = time.monotonic()
            status, took = patch(staged, {"master_enable": True, "transport_params": [
                {"destination_ip": "127.0.0.1", "destination_port": port, "ext_transport": "tcp"}],
                "activation": {"mode": "activate_immediate"}})
            if status != 200:
                raise CaseError(f"activation {k}: {status}")
            patch_ms.append(took * 1000)
            # Each wait takes the next such line: this stream's.
            start_ms.append((tail.wait(r"\] stream \d+ ring \d+: ", 10) - t) * 1000)
            t = time.monotonic()
            patch(staged, {"master_enable": False, "activation": {"mode": "activate_immediate"}})
            stop_ms.append((tail.wait(r"stream \d+ the sender ended it", 10) - t) * 1000)
    finally:
        send.stop()
        recv.stop()
    rows = [[what, f"{percentile(v, 50):.1f}", f"{percentile(v, 99):.1f}", f"{max(v):.1f}"]
            for what, v in (("PATCH answered (ms)", patch_ms),
                            ("to the stream's start at the receiver (ms)", start_ms),
                            ("disabled to the stream's end (ms)", stop_ms))]
    print(f"\nIS-05 activations: {count} enable + disable pairs from one controller to one "
          "sender (1080p60 test pattern, TCP, 127.0.0.1)\n")
    print(text_table(["", "p50", "p99", "max"], rows, {1, 2, 3}))


def _wait_text(proc: Proc, pattern: str, timeout: float = 15) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = proc.stderr()
        if re.search(pattern, text):
            return text
        if proc.done:
            raise CaseError(f"{proc.name} exited: {text[-300:]}")
        time.sleep(0.02)
    raise CaseError(f"{proc.name}: no /{pattern}/")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build-dir", default="build")
    p.add_argument("--senders", type=int, default=100)
    p.add_argument("--receivers", type=int, default=25)
    p.add_argument("--duration", type=float, default=600, help="seconds the nodes are held")
    p.add_argument("--activations", type=int, default=1000)
    p.add_argument("--quick", action="store_true", help="10 + 5 nodes for 12 s, 50 activations")
    a = p.parse_args()
    if a.quick:
        a.senders, a.receivers, a.duration, a.activations = 10, 5, 12, 50
    build = Path(a.build_dir).resolve()
    with tempfile.TemporaryDirectory(prefix="nmos-bench-") as d:
        work = Path(d)
        try:
            scale(build, a.senders, a.receivers, a.duration, work)
            activations(build, a.activations, work)
        except CaseError as e:
            print(f"bench: {e}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
