#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Loss and delay on the lab's veth pair (the lab VM's kernel has sch_netem; the host's may
not). Runs inside the lab:  tests/rxe/run_in_vm.sh tests/rxe/netem.py BUILD_DIR

One receiver on 10.99.0.1 (TCP, two streams, --metrics) and senders from 10.99.0.2. With
`tc netem delay 5ms loss 0.1%` on both veth ends:
  - a real-time stream that fits the loss-limited TCP rate (320x240 at 15 fps) keeps its rate;
  - one far above it (1080p60 UYVY, --realtime) drops frames, reports every drop (the sender's
    dropped count equals the gaps the receiver counted), and never stalls the receiver: the
    small stream, running beside it, keeps its rate;
  - with netem removed the large stream is back to its netem-free rate within a second (three
    when the emulated VM stalls in that second; the output says which).
Rates come from the receiver's Prometheus metrics, scraped every 250 ms. The lab's CPU may be
emulated, so "full rate" is what the same stream reaches in the same VM without netem.
Exit 0 when every check holds, 1 otherwise, 77 outside the lab."""

import json
import os
import re
import subprocess
import sys
import time
import urllib.request

if not os.path.isdir("/sys/class/net/veth0"):
    print("rxe netem: not in the lab (run through tests/rxe/run_in_vm.sh)", file=sys.stderr)
    sys.exit(77)

build = sys.argv[1] if len(sys.argv) > 1 else "build"
recv_bin = f"{build}/receiver/rdmavideo-recv"
send_bin = f"{build}/sender/rdmavideo-send"
out = os.environ.get("RXE_OUT", "/tmp")
failures = []


def check(ok, what):
    print(f"rxe netem: {'ok  ' if ok else 'FAIL'} {what}", flush=True)
    if not ok:
        failures.append(what)


def sh(command):
    subprocess.run(command, shell=True, check=True)


def netem(on):
    for dev in ("veth0", "veth1"):
        if on:
            sh(f"tc qdisc replace dev {dev} root netem delay 5ms loss 0.1%")
        else:
            subprocess.run(f"tc qdisc del dev {dev} root", shell=True, stderr=subprocess.DEVNULL)


subprocess.run("modprobe sch_netem", shell=True)
recv_log = open(f"{out}/netem-recv.log", "w")
recv = subprocess.Popen([recv_bin, "--listen", "10.99.0.1:0", "--transport", "tcp", "--serve",
                         "--max-streams", "2", "--quiet", "--metrics", "127.0.0.1:9464"],
                        stderr=recv_log)
port = None
for _ in range(300):
    text = open(f"{out}/netem-recv.log").read()
    m = re.search(r"listening on 10\.99\.0\.1:(\d+)", text)
    if m and "metrics at" in text:
        port = m.group(1)
        break
    time.sleep(0.1)
if not port:
    print(open(f"{out}/netem-recv.log").read(), file=sys.stderr)
    sys.exit(1)


def frames():
    """stream name -> (frames, dropped), from one scrape."""
    text = urllib.request.urlopen("http://127.0.0.1:9464/metrics", timeout=5).read().decode()
    result = {}
    for line in text.splitlines():
        m = re.match(r'rdmavideo_stream_(frames_total|dropped_frames_total)\{stream="\d+",'
                     r'name="([^"]+)".*\} (\S+)$', line)
        if m:
            f, d = result.get(m.group(2), (0, 0))
            value = float(m.group(3))
            result[m.group(2)] = (value, d) if m.group(1) == "frames_total" else (f, value)
    return result


def rate(name, seconds):
    """Frames a second the receiver got from stream `name` over the next `seconds`."""
    before = frames().get(name, (0, 0))[0]
    time.sleep(seconds)
    return (frames().get(name, (0, 0))[0] - before) / seconds


def sender(name, size, fps, extra=()):
    log = open(f"{out}/netem-{name}.log", "w")
    return subprocess.Popen([send_bin, "--connect", f"10.99.0.1:{port}", "--transport", "tcp",
                             "--testsrc", "-s", size, "-r", str(fps), "--realtime", "--quiet",
                             "--name", name, "--stats-json", f"{out}/netem-{name}.json",
                             *extra], stderr=log)


def wait_for(name, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        if frames().get(name, (0, 0))[0] > 0:
            return True
        time.sleep(0.1)
    return False


try:
    small = sender("small", "320x240", 15)
    check(wait_for("small"), "the small stream started")
    large = sender("large", "1920x1080", 60, ["--pix-fmt", "uyvy422"])
    check(wait_for("large"), "the large stream started")
    time.sleep(1)
    base_large = rate("large", 2)
    print(f"rxe netem: without netem: large {base_large:.1f} fps", flush=True)

    netem(True)
    time.sleep(1)  # let TCP settle into the loss
    t0 = time.time()
    small_under, large_under = frames()["small"][0], frames()["large"][0]
    time.sleep(4)
    seconds = time.time() - t0
    small_rate = (frames()["small"][0] - small_under) / seconds
    large_rate = (frames()["large"][0] - large_under) / seconds
    print(f"rxe netem: with delay 5ms loss 0.1%: small {small_rate:.1f} fps, large "
          f"{large_rate:.1f} fps", flush=True)
    check(small_rate >= 13.5, f"the small stream keeps its 15 fps under netem ({small_rate:.1f})")
    check(large_rate < 0.8 * base_large,
          f"the large stream is limited by the lossy link ({large_rate:.1f} < 0.8 x "
          f"{base_large:.1f} fps)")

    netem(False)
    removed = time.time()
    time.sleep(1)
    recovered = rate("large", 2)
    print(f"rxe netem: from 1 s after netem was removed: large {recovered:.1f} fps", flush=True)
    within = "a second"
    if recovered < 0.8 * base_large:
        # The emulated VM stalls now and then for a moment (no KVM here): one more window, and
        # the claim says which it was.
        recovered = rate("large", 2)
        within = "three seconds"
        print(f"rxe netem: from 3 s after netem was removed: large {recovered:.1f} fps",
              flush=True)
    check(recovered >= 0.8 * base_large,
          f"the large stream is back to its rate within {within} ({recovered:.1f} >= 0.8 x "
          f"{base_large:.1f} fps)")
    check(rate("small", 1) >= 13.5, "the small stream still keeps its rate")

    large.send_signal(2)
    small.send_signal(2)
    large.wait(30)
    small.wait(30)
    dropped_receiver = frames()["large"][1]
    sent = json.load(open(f"{out}/netem-large.json"))
    print(f"rxe netem: large: sender dropped {sent['dropped']}, receiver counted {dropped_receiver:.0f}",
          flush=True)
    check(sent["dropped"] > 0, "the large stream dropped frames at the sender")
    # Every drop is reported: the receiver's gap count is the sender's count, but for drops
    # after the last frame the receiver saw (only the sender knows of those).
    check(0 < dropped_receiver <= sent["dropped"] <= dropped_receiver + 120,
          "the receiver counted the drops the sender reported")
    small_summary = json.load(open(f"{out}/netem-small.json"))
    check(small_summary["dropped"] == 0, f"the small stream dropped nothing ({small_summary['dropped']})")
finally:
    netem(False)
    recv.send_signal(15)
    try:
        recv.wait(30)
    except subprocess.TimeoutExpired:
        recv.kill()
        failures.append("the receiver did not stop")

print(f"rxe netem: {'PASS' if not failures else 'FAIL: ' + '; '.join(failures)}", flush=True)
sys.exit(1 if failures else 0)
