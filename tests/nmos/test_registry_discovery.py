# SPDX-License-Identifier: Apache-2.0
"""An NMOS node finds its registry the way a facility publishes one, with no --nmos-registry:
over unicast DNS (a real dnsmasq serving the _nmos-register._tcp PTR, SRV and TXT records of
the host's search domain, which resolv.conf names, as DHCP would have set it) and over mDNS (a
registry published through a real avahi-daemon with avahi-publish); one list by "pri", the
lowest first, and the next on failure.

Runs on a namespaced host of its own (tests/discovery/avahi_lab.py): its resolv.conf is the
namespace's (/etc/netns/NAME/resolv.conf, as `ip netns exec` gives it). Needs root, dnsmasq
and avahi-daemon; skipped, saying why, without them. Run by CTest with RDMAVIDEO_RECV set."""

import os
import shutil
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
sys.path.insert(0, os.path.join(HERE, "..", "discovery"))
import avahi_lab  # noqa: E402
from logged_process import Logged  # noqa: E402

RECV = os.environ.get("RDMAVIDEO_RECV", "rdmavideo-recv")
DOMAIN = "studio.example"
TYPE = "_nmos-register._tcp"


def why_not():
    if not shutil.which("dnsmasq") and not os.path.exists("/usr/sbin/dnsmasq"):
        return "dnsmasq is not installed (scripts/setup.sh installs dnsmasq-base)"
    return avahi_lab.why_not()


@unittest.skipIf(why_not(), why_not())
class RegistryFound(unittest.TestCase):
    def setUp(self):
        self.lab = avahi_lab.Lab(one_host=True).__enter__()
        self.host = self.lab.a
        self.etc = f"/etc/netns/{self.host.netns}"
        os.makedirs(self.etc)
        with open(os.path.join(self.etc, "resolv.conf"), "w") as f:
            f.write(f"nameserver {self.host.address}\nsearch {DOMAIN}\noptions timeout:1\n")
        self.running = []

    def tearDown(self):
        for p in reversed(self.running):
            p.stop()
        self.lab.__exit__(None, None, None)
        shutil.rmtree(self.etc, ignore_errors=True)

    def start(self, args):
        p = Logged(args, popen=self.host.popen)
        self.running.append(p)
        return p

    def registry(self):
        r = self.start(["/usr/bin/python3", os.path.join(HERE, "mock_registry.py"),
                        self.host.address])
        return r, r.wait_for(r"registry at (http://\S+:(\d+))")

    def dns(self, registries):
        """dnsmasq on the host, answering for DOMAIN only: each (instance, port, pri) as a PTR
        under TYPE, an SRV to the host and a TXT as IS-04 gives it (in a file: only there does
        dnsmasq take a quoted string with a comma in it)."""
        lines = [f"host-record=registry.{DOMAIN},{self.host.address}"]
        for instance, port, pri in registries:
            full = f"{instance}.{TYPE}.{DOMAIN}"
            lines += [f"ptr-record={TYPE}.{DOMAIN},{full}",
                      f"srv-host={full},registry.{DOMAIN},{port},0,0",
                      f'txt-record={full},api_proto=http,"api_ver=v1.2,v1.3",api_auth=false,'
                      f'pri={pri}']
        conf = os.path.join(self.host.dir, "dnsmasq.conf")
        with open(conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        d = self.start(["dnsmasq", "--no-daemon", "--conf-file=" + conf, "--no-resolv",
                        "--no-hosts", "--pid-file=", "--bind-interfaces",
                        "--listen-address=" + self.host.address, "--log-queries",
                        "--log-facility=-", f"--local=/{DOMAIN}/"])
        d.wait_for("started, version")
        return d

    def node(self, extra=()):
        return self.start([RECV, "--listen", f"{self.host.address}:0", "--serve", "--max-streams",
                           "1", "--name", "found", "--nmos", f"{self.host.address}:0",
                           *extra])

    def test_unicast_by_priority_then_the_next_and_mdns_in_one_list(self):
        low, low_at = self.registry()
        high, high_at = self.registry()
        self.dns([("registry-b", high_at.group(2), 20), ("registry-a", low_at.group(2), 10)])
        # Found in the search domain, with no flag: the lowest "pri" first.
        node = self.node()
        node.wait_for("registered with " + low_at.group(1), 20)
        node_id = low.wait_for(r"POST node (\S+) 201").group(1)
        low.wait_for(r"POST receiver \S+ 201")
        self.assertNotIn("POST", high.text())
        # That registry goes: the next by priority, still from DNS.
        low.stop()
        node.wait_for("registered with " + high_at.group(1), 30)
        high.wait_for(f"POST node {node_id} 201")
        self.assertEqual(node.stop(), 0)
        high.wait_for(f"DELETE node {node_id}")

        # A registry published over mDNS with a lower "pri" than any unicast one comes first:
        # one list of both.
        near, near_at = self.registry()
        self.start(["avahi-publish", "-s", "nearby", TYPE, near_at.group(2), "api_proto=http",
                    "api_ver=v1.3", "api_auth=false", "pri=5"]).wait_for("Established")
        again = self.node()
        again.wait_for("registered with " + near_at.group(1), 20)
        near.wait_for(f"POST node {node_id} 201")  # the same node: its id is its own

    def test_a_domain_given_is_the_one_looked_in(self):
        r, at = self.registry()
        self.dns([("registry-a", at.group(2), 10)])
        # Another domain than the search list's: nothing there, and the node says so plainly.
        node = self.node(["--nmos-domain", "elsewhere.example"])
        node.wait_for("peer-to-peer", 20)
        node.wait_for(r"no registry looked up in elsewhere\.example: _nmos-register\._tcp\."
                      r"elsewhere\.example: no name server answered it")
        self.assertNotIn("POST", r.text())
        node.stop()
        # The facility's domain, named: found.
        node = self.node(["--nmos-domain", DOMAIN])
        node.wait_for("registered with " + at.group(1), 20)


if __name__ == "__main__":
    unittest.main()
