#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The demo's "found and routed" step: on a host of its own (a network namespace with its own
D-Bus and avahi-daemon, as tests/discovery/avahi_lab.py makes one), a recorder advertises
itself by DNS-SD and runs an NMOS node; rdmavideo-doctor --discover lists it; a sender
connects to it by name; then a sender that is an NMOS node is routed into it by an IS-05
activation, as a facility's controller does, and the IS-04 resources show the connection.

  demo-routing.py BUILD_DIR OUT_DIR

Needs root (namespaces); says so and exits 0 without it."""

import json
import os
import re
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "discovery"))
import avahi_lab  # noqa: E402


def wait_for(path, pattern, seconds=15):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with open(path) as f:
            m = re.search(pattern, f.read())
        if m:
            return m
        time.sleep(0.05)
    raise SystemExit(f"demo: no /{pattern}/ in {path}")


def call(method, url, body=None):
    req = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)


def main():
    build, out = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    if len(sys.argv) > 3:  # on the lab's host
        return on_host(build, out, sys.argv[3], sys.argv[4])
    why = avahi_lab.why_not()
    if why:
        print(f"(skipped: {why})")
        return 0
    with avahi_lab.Lab(one_host=True) as lab:
        return subprocess.run(lab.a.command([sys.executable, os.path.abspath(__file__), build, out,
                                             lab.a.address, lab.a.bus]), env=lab.a.env()).returncode


class Here:
    """This host, from inside it."""

    def __init__(self, address):
        self.address = address

    def popen(self, args, **kwargs):
        return subprocess.Popen(args, **kwargs)

    def run(self, args):
        return subprocess.run(args, capture_output=True, text=True, timeout=60)


def on_host(build, out, address, bus):
    host = Here(address)
    recv = os.path.join(build, "receiver", "rdmavideo-recv")
    send = os.path.join(build, "sender", "rdmavideo-send")
    doctor = os.path.join(build, "doctor", "rdmavideo-doctor")
    if True:  # noqa: SIM108 (one block, as it reads)
        log = os.path.join(out, "routing-recv.log")
        with open(log, "w") as f:
            recorder = host.popen([recv, "--listen", "0.0.0.0:7000", "--serve", "--max-streams", "2",
                                   "--name", "studio recorder", "--nmos", f"{host.address}:8080",
                                   "--output", os.path.join(out, "routed-{n}.mov"), "--codec", "prores_hq",
                                   "--quiet"], stderr=f)
        wait_for(log, r'advertised as "studio recorder"')
        wait_for(log, r"NMOS node at")
        print(host.run([doctor, "--discover", "--wait", "1.5"]).stdout, end="")
        print("$ rdmavideo-send --connect \"studio recorder\" --testsrc -s 1280x720 -r 30 --frames 60")
        r = host.run([send, "--connect", "studio recorder", "--testsrc", "-s", "1280x720", "-r", "30",
                      "--frames", "60", "--quiet"])
        print("\n".join(line for line in r.stderr.splitlines() if "is at" in line or "sent" in line))

        slog = os.path.join(out, "routing-send.log")
        with open(slog, "w") as f:
            camera = host.popen([send, "--testsrc", "-s", "1280x720", "-r", "30", "--realtime", "--tone", "880",
                                 "--name", "camera 2", "--nmos", f"{host.address}:8081"], stderr=f)
        wait_for(slog, r"NMOS node at")
        node_r, node_s = f"http://{host.address}:8080/x-nmos/", f"http://{host.address}:8081/x-nmos/"
        receiver = call("GET", node_r + "node/v1.3/receivers")[1]
        sender = call("GET", node_s + "node/v1.3/senders")[0]
        leg = call("GET", node_r + f"connection/v1.1/single/receivers/{receiver['id']}/active")["transport_params"][0]
        print(f"IS-05: route sender \"{sender['label']}\" to receiver \"{receiver['label']}\" "
              f"({leg['interface_ip']}:{leg['destination_port']}), activate_immediate")
        call("PATCH", node_r + f"connection/v1.1/single/receivers/{receiver['id']}/staged",
             {"sender_id": sender["id"], "master_enable": True, "activation": {"mode": "activate_immediate"}})
        call("PATCH", node_s + f"connection/v1.1/single/senders/{sender['id']}/staged",
             {"receiver_id": receiver["id"], "master_enable": True,
              "transport_params": [{"destination_ip": leg["interface_ip"], "destination_port": leg["destination_port"]}],
              "activation": {"mode": "activate_immediate"}})
        time.sleep(3)
        sub = call("GET", node_s + f"node/v1.3/senders/{sender['id']}")["subscription"]
        print(f"IS-04 sender subscription while it streams: {json.dumps(sub)}")
        call("PATCH", node_s + f"connection/v1.1/single/senders/{sender['id']}/staged",
             {"master_enable": False, "activation": {"mode": "activate_immediate"}})
        time.sleep(1)
        camera.terminate()
        camera.wait(timeout=20)
        recorder.terminate()
        recorder.wait(timeout=30)
        print("\n".join(line for line in open(log).read().splitlines()
                        if "recorded" in line or "takes sender" in line))
    return 0


if __name__ == "__main__":
    sys.exit(main())
