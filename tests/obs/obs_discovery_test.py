#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The OBS dialog's "On the network" list in the real OBS (Debian's obs-studio, under Xvfb),
against a real avahi-daemon: on a host of its own (a network namespace with its own D-Bus
and avahi-daemon, tests/discovery/avahi_lab.py), rdmavideo-recv advertises itself as
"obs recorder"; the dialog, opened from the Tools menu with the keyboard, lists it (what it
listed is in OBS's log); and the output, given that name instead of an address through
obs-websocket, finds the receiver by DNS-SD and sends it 30 frames.

  obs_discovery_test.py --plugin rdmavideo-obs.so --recv rdmavideo-recv

Exits 0 when every check passed, 77 (skipped) without root, avahi-daemon, OBS or Xvfb."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "discovery"))
import avahi_lab  # noqa: E402

SKIP = 77


def inside(a):
    sys.path.insert(0, HERE)
    import real_obs_test as r  # skips (77) itself without python3-websocket

    for tool in ("obs", "Xvfb", "xdotool"):
        r.need(tool)
    work = tempfile.mkdtemp(prefix="obs-discovery-")
    home = os.path.join(work, "home")
    os.makedirs(home)
    x = r.VirtualScreen("1280x800")
    obs_log_path = os.path.join(work, "obs.log")
    obs_log = open(obs_log_path, "w")
    obs = None
    recv = None
    try:
        cfg = r.seed_config(home)
        r.install_plugin(cfg, a.plugin)
        recv_log = open(os.path.join(work, "recv.log"), "w+")
        stats = os.path.join(work, "recv.json")
        recv = subprocess.Popen([a.recv, "--listen", "0.0.0.0:0", "--name", "obs recorder",
                                 "--frames", "30", "--stats-json", stats],
                                stdout=subprocess.DEVNULL, stderr=recv_log)
        port = None
        deadline = time.time() + 20
        while time.time() < deadline:
            recv_log.seek(0)
            text = recv_log.read()
            m = re.search(r"listening on 0\.0\.0\.0:(\d+)", text)
            port = int(m.group(1)) if m else None
            if port and 'advertised as "obs recorder"' in text:
                break
            time.sleep(0.1)
        r.check(port is not None, "rdmavideo-recv listens")
        r.check('advertised as "obs recorder"' in text, "and advertises itself")

        obs = r.start_obs(home, x.display, obs_log)
        ws = r.Ws()
        r.open_dialog(x.display, a.screenshot)
        want = f"obs recorder (10.0.0.1:{port}, 1 of 1 stream free, no key)"
        listed = ""
        deadline = time.time() + 15
        while time.time() < deadline:
            with open(obs_log_path) as f:
                m = re.search(r"rdmavideo dialog: on the network: (.*)", f.read())
            if m:
                listed = m.group(1)
                break
            time.sleep(0.2)
        print("the dialog listed:", listed, flush=True)
        r.check(want in listed, f"the dialog lists the receiver: {want}")

        # The name instead of an address: the output finds the receiver itself.
        ws.call("SetOutputSettings", {"outputName": "rdmavideo",
                                      "outputSettings": {"destinations": "obs recorder",
                                                         "transport": "tcp", "name": "by name"}})
        ws.call("StartOutput", {"outputName": "rdmavideo"})
        try:
            recv.wait(timeout=60)
        except subprocess.TimeoutExpired:
            recv.kill()
            recv.wait()
        r.check(recv.returncode == 0, "the receiver got its frames from OBS, found by name")
        got = json.load(open(stats)) if os.path.exists(stats) else {}
        r.check(got.get("frames") == 30 and got.get("streams", [{}])[0].get("name") == "by name",
                f"30 frames of the stream 'by name' ({json.dumps(got)[:300]})")
        with open(obs_log_path) as f:
            r.check(f'"obs recorder" is at 10.0.0.1:{port}' in f.read(),
                    "OBS's log says where the name led")
    except Exception as e:  # OBS that died, a websocket that never answered: say so
        r.check(False, f"{type(e).__name__}: {e}")
    finally:
        if obs is not None and obs.poll() is None:
            r.stop_obs(obs)
        if recv is not None and recv.poll() is None:
            recv.kill()
            recv.wait()
        x.close()
        if r.failures:
            with open(obs_log_path) as f:
                print("--- OBS's log (the rdmavideo lines) ---\n" +
                      "".join(line for line in f if "rdmavideo" in line), flush=True)
        shutil.rmtree(work, ignore_errors=True)
    print("FAILED: " + "; ".join(r.failures) if r.failures else "all checks passed", flush=True)
    return 1 if r.failures else 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--plugin", required=True)
    p.add_argument("--recv", required=True)
    p.add_argument("--screenshot")
    p.add_argument("--inside-lab", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.inside_lab:
        return inside(a)
    why = avahi_lab.why_not()
    if why:
        print("skipped:", why)
        return SKIP
    with avahi_lab.Lab(one_host=True) as lab:
        run = subprocess.run(lab.a.command([sys.executable, os.path.abspath(__file__), *sys.argv[1:],
                                            "--inside-lab"]), env=lab.a.env(), timeout=280)
        return run.returncode


if __name__ == "__main__":
    sys.exit(main())
