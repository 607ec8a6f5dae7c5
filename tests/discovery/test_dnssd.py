# SPDX-License-Identifier: Apache-2.0
"""DNS-SD as users meet it: two hosts on one link (network namespaces), each with a real
avahi-daemon. rdmavideo-recv advertises itself, and what it advertises is read by two
implementations the project did not write, Avahi's avahi-browse and python3-zeroconf;
rdmavideo-send connects by the receiver's name from the other host; a receiver that stops is
withdrawn; a name already taken is renamed, as DNS-SD does; rdmavideo-doctor --discover lists
receivers and senders; and without a responder everything goes on by address.

Run by CTest with RDMAVIDEO_SEND, RDMAVIDEO_RECV and RDMAVIDEO_DOCTOR set; as root."""

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
import avahi_lab  # noqa: E402
from logged_process import Logged  # noqa: E402

SEND = os.environ.get("RDMAVIDEO_SEND", "rdmavideo-send")
RECV = os.environ.get("RDMAVIDEO_RECV", "rdmavideo-recv")
DOCTOR = os.environ.get("RDMAVIDEO_DOCTOR", "rdmavideo-doctor")
GST_PLUGIN_DIR = os.environ.get("RDMAVIDEO_GST_PLUGIN_DIR")
ZEROCONF = os.path.join(os.path.dirname(__file__), "zeroconf_browse.py")
PYTHON = "/usr/bin/python3"  # Debian's, with python3-zeroconf


def gst_env():
    """gst-launch-1.0 with the build's plugin (and, in a sanitizer build, its runtime first;
    GStreamer's own leaks are not this test's)."""
    env = {"GST_PLUGIN_PATH": GST_PLUGIN_DIR}
    if os.environ.get("RDMAVIDEO_GST_PRELOAD"):
        env["LD_PRELOAD"] = os.environ["RDMAVIDEO_GST_PRELOAD"]
        env["ASAN_OPTIONS"] = "detect_leaks=0"
    return env


def unescape(text):
    """avahi-browse -p writes a name's bytes outside [A-Za-z0-9-] as \\DDD (decimal)."""
    return re.sub(r"\\(\d{3})", lambda m: chr(int(m.group(1))), text).replace("\\.", ".")


def avahi_browse(host, service_type):
    """{name: (address, port, txt dict)} from avahi-browse -rpt on `host`."""
    out = host.run(["avahi-browse", "-rpt", service_type], timeout=20).stdout
    found = {}
    for line in out.splitlines():
        fields = line.split(";")
        if fields[0] != "=" or len(fields) < 10:
            continue
        txt = dict(kv.split("=", 1) if "=" in kv else (kv, "")
                   for kv in re.findall(r'"([^"]*)"', ";".join(fields[9:])))
        found[unescape(fields[3])] = (fields[7], int(fields[8]), txt)
    return found


def zeroconf_browse(host, service_type, seconds=3):
    r = host.run([PYTHON, ZEROCONF, service_type, host.address, str(seconds)], timeout=60)
    if r.returncode != 0:
        raise AssertionError("zeroconf_browse failed: " + r.stderr)
    return {s["name"]: s for s in json.loads(r.stdout)}


class Receiver(Logged):
    """rdmavideo-recv on a host, listening on any free port."""

    def __init__(self, host, *args, env=None):
        super().__init__([RECV, "--listen", "0.0.0.0:0", "--quiet", *args], popen=host.popen, env=env)
        self.port = int(self.wait_for(r"listening on 0\.0\.0\.0:(\d+)").group(1))


def wait_until(check, seconds, what):
    deadline = time.monotonic() + seconds
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"{what} within {seconds} s (last seen: {last!r})")


@unittest.skipIf(avahi_lab.why_not(), avahi_lab.why_not() or "")
class Discovery(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.lab = avahi_lab.Lab().__enter__()
        cls.a, cls.b = cls.lab.a, cls.lab.b
        cls.key = tempfile.NamedTemporaryFile("w", suffix=".key", delete=False)
        cls.key.write("k" * 40)
        cls.key.close()
        os.chmod(cls.key.name, 0o600)

    @classmethod
    def tearDownClass(cls):
        cls.lab.__exit__(None, None, None)
        os.unlink(cls.key.name)

    def test_receiver_seen_by_avahi_browse_and_zeroconf(self):
        rx = Receiver(self.a, "--serve", "--name", "studio recorder", "--max-streams", "2",
                      "--key-file", self.key.name)
        try:
            rx.wait_for(r'advertised as "studio recorder"')
            seen = wait_until(lambda: avahi_browse(self.b, "_rdmavideo._tcp").get("studio recorder"),
                              10, "avahi-browse on the other host sees the receiver")
            address, port, txt = seen
            self.assertEqual(address, self.a.address)
            self.assertEqual(port, rx.port)
            self.assertEqual(txt["proto"], "3")
            self.assertEqual(txt["key"], "required")
            self.assertRegex(txt["key_id"], r"^[0-9a-f]{16}$")
            self.assertEqual(txt["streams_free"], "2")
            self.assertEqual(txt["max_streams"], "2")
            self.assertIn("tcp", txt["transports"].split(","))
            self.assertNotIn("k" * 32, json.dumps(txt))  # the key's id, never the key

            zc = zeroconf_browse(self.b, "_rdmavideo._tcp")
            self.assertIn("studio recorder", zc)
            self.assertEqual(zc["studio recorder"]["port"], rx.port)
            self.assertIn(self.a.address, zc["studio recorder"]["addresses"])
            self.assertEqual(zc["studio recorder"]["txt"]["key_id"], txt["key_id"])
            self.assertEqual(zc["studio recorder"]["txt"]["streams_free"], "2")

            # A receiver that stops says goodbye: its entry is withdrawn from the other host.
            self.assertEqual(rx.stop(), 0)
            wait_until(lambda: "studio recorder" not in avahi_browse(self.b, "_rdmavideo._tcp"),
                       10, "the stopped receiver's entry is withdrawn")
            self.assertNotIn("studio recorder", zeroconf_browse(self.b, "_rdmavideo._tcp", 2))
        finally:
            rx.stop()

    def test_sender_connects_by_name_and_doctor_lists_both(self):
        rx = Receiver(self.a, "--name", "recorder-1", "--frames", "90", "--verify",
                      "--key-file", self.key.name)
        try:
            rx.wait_for(r'advertised as "recorder-1"')
            tx = self.b.popen([SEND, "--testsrc", "-s", "320x240", "-r", "30", "--realtime",
                               "--frames", "90", "--checksum", "--connect", "recorder-1",
                               "--key-file", self.key.name, "--advertise", "--name", "cam-1"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            # While it streams: the receiver has one stream less free, and the sender is listed.
            listing = wait_until(
                lambda: (lambda j: j if j["senders"] and j["receivers"] and
                         j["receivers"][0]["streams_free"] == 0 else None)(json.loads(
                             self.a.run([DOCTOR, "--discover", "--json", "--wait", "1.5"]).stdout)),
                10, "rdmavideo-doctor --discover lists the streaming receiver and the sender")
            receiver = listing["receivers"][0]
            self.assertEqual(receiver["name"], "recorder-1")
            self.assertEqual(receiver["port"], rx.port)
            self.assertTrue(receiver["key_required"])
            self.assertEqual(receiver["max_streams"], 1)
            sender = listing["senders"][0]
            self.assertEqual(sender["name"], "cam-1")
            self.assertEqual(sender["address"], self.b.address)
            self.assertEqual(sender["txt"]["format"], "320x240 uyvy422")
            self.assertEqual(sender["txt"]["destinations"], "recorder-1")
            _, err = tx.communicate(timeout=30)
            self.assertEqual(tx.returncode, 0, err)
            self.assertIn(f'"recorder-1" is at {self.a.address}:{rx.port}', err)
            self.assertEqual(rx.proc.wait(timeout=15), 0, rx.text())
            self.assertIn("checksum failures 0", rx.text())
            text = self.b.run([DOCTOR, "--discover", "--wait", "1"]).stdout
            self.assertRegex(text, r"receiver")
        finally:
            rx.stop()

    @unittest.skipIf(not GST_PLUGIN_DIR, "no GStreamer plugin in this build")
    def test_rdmasink_takes_a_receivers_name_as_its_host(self):
        rx = Receiver(self.a, "--name", "gst recorder", "--frames", "30", "--verify")
        try:
            rx.wait_for(r'advertised as "gst recorder"')
            r = self.b.run(["gst-launch-1.0", "-q", "videotestsrc", "num-buffers=30", "!",
                            "video/x-raw,format=UYVY,width=320,height=240,framerate=30/1", "!",
                            "rdmasink", "host=gst recorder", "checksum=true"],
                           env=gst_env(), timeout=60)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertEqual(rx.proc.wait(timeout=15), 0, rx.text())
            self.assertRegex(rx.text(), r"30 frames 320x240 uyvy422 .* checksum failures 0")
        finally:
            rx.stop()

    def test_a_name_taken_is_renamed(self):
        # On another host: found while probing, the later one becomes "studio #2".
        first = Receiver(self.a, "--serve", "--name", "studio")
        first.wait_for(r'advertised as "studio"')
        second = Receiver(self.b, "--serve", "--name", "studio")
        # On the same host: the responder refuses the name at once.
        third = Receiver(self.a, "--serve", "--name", "studio")
        try:
            second.wait_for(r'advertised as "studio #2"|taken on the network; advertising as "studio #2"')
            third.wait_for(r'advertised as "studio #\d"|advertising as "studio #\d"')
            names = wait_until(lambda: (lambda f: f if len(f) == 3 else None)(
                {n: v for n, v in avahi_browse(self.b, "_rdmavideo._tcp").items()
                 if n.startswith("studio")}), 10, "three receivers called studio, renamed")
            self.assertEqual(sorted(names), ["studio", "studio #2", "studio #3"])
            ports = {n: v[1] for n, v in names.items()}
            self.assertEqual(ports["studio"], first.port)
            self.assertEqual(sorted([ports["studio #2"], ports["studio #3"]]),
                             sorted([second.port, third.port]))
            zc = zeroconf_browse(self.a, "_rdmavideo._tcp")
            self.assertTrue({"studio", "studio #2", "studio #3"} <= set(zc), zc.keys())
        finally:
            for r in (first, second, third):
                r.stop()

    def test_without_a_responder_by_address_still_works(self):
        nowhere = {"DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/bus"}
        rx = Receiver(self.a, "--frames", "10", env=nowhere)
        try:
            rx.wait_for(r"not advertised \(DNS-SD\)")
            tx = self.b.run([SEND, "--testsrc", "-s", "64x64", "--frames", "10",
                             "--connect", f"{self.a.address}:{rx.port}"], env=nowhere)
            self.assertEqual(tx.returncode, 0, tx.stderr)
            self.assertEqual(rx.proc.wait(timeout=15), 0, rx.text())
            self.assertEqual(rx.text().count("not advertised"), 1)  # said once
            # A name without a responder: the sender says why it cannot find it.
            by_name = self.b.run([SEND, "--testsrc", "-s", "64x64", "--frames", "1",
                                  "--connect", "recorder-1"], env=nowhere)
            self.assertNotEqual(by_name.returncode, 0)
            self.assertIn("avahi-daemon is not running", by_name.stderr)
            doctor = self.b.run([DOCTOR, "--discover"], env=nowhere)
            self.assertEqual(doctor.returncode, 1)
            self.assertIn("avahi-daemon is not running", doctor.stderr)
        finally:
            rx.stop()

    def test_a_name_nobody_has(self):
        started = time.monotonic()
        r = self.b.run([SEND, "--testsrc", "-s", "64x64", "--frames", "1", "--connect",
                        "no such recorder"])
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('no receiver called "no such recorder" answered', r.stderr)
        self.assertLess(time.monotonic() - started, 20)


if __name__ == "__main__":
    unittest.main()
