# SPDX-License-Identifier: Apache-2.0
"""Two hosts on one machine for DNS-SD tests: network namespaces joined by a veth pair, each
with its own D-Bus system bus and a real avahi-daemon (Avahi ignores loopback, so each gets
the veth end as its interface). Programs run "on" a host through `Host.run` / `Host.popen`,
inside its namespace with DBUS_SYSTEM_BUS_ADDRESS pointing at its bus.

Needs root (namespaces, mounts), avahi-daemon and dbus-daemon."""

import os
import shutil
import signal
import subprocess
import tempfile
import time

BUS_CONF = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={path}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
"""

AVAHI_CONF = """[server]
host-name={host}
use-ipv4=yes
use-ipv6=no
allow-interfaces={interface}
enable-dbus=yes
ratelimit-interval-usec=1000000
ratelimit-burst=1000
[publish]
publish-hinfo=no
publish-workstation=no
"""


def why_not():
    """None where the lab can run here, else why not (the test then skips)."""
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    for tool in ("ip", "avahi-daemon", "dbus-daemon", "avahi-browse"):
        if not shutil.which(tool) and not os.path.exists("/usr/sbin/" + tool):
            return f"{tool} is not installed (scripts/setup.sh installs it)"
    return None


def _sh(*args, check=True):
    return subprocess.run(args, check=check, capture_output=True, text=True)


class Host:
    def __init__(self, lab, name, interface, address):
        self.lab = lab
        self.netns = f"{lab.tag}{name}"
        self.interface = interface
        self.address = address
        self.host_name = f"{lab.tag}{name}"
        self.dir = os.path.join(lab.dir, name)
        self.bus = os.path.join(self.dir, "bus")
        self.procs = []

    def env(self, extra=None):
        env = dict(os.environ)
        env["DBUS_SYSTEM_BUS_ADDRESS"] = "unix:path=" + self.bus
        env.update(extra or {})
        return env

    def command(self, args):
        return ["ip", "netns", "exec", self.netns, *args]

    def run(self, args, timeout=30, env=None, **kwargs):
        return subprocess.run(self.command(args), env=self.env(env), capture_output=True,
                              text=True, timeout=timeout, **kwargs)

    def popen(self, args, env=None, **kwargs):
        proc = subprocess.Popen(self.command(args), env=self.env(env), **kwargs)
        self.procs.append(proc)
        return proc

    def start(self):
        os.makedirs(self.dir)
        with open(os.path.join(self.dir, "bus.conf"), "w") as f:
            f.write(BUS_CONF.format(path=self.bus))
        with open(os.path.join(self.dir, "avahi.conf"), "w") as f:
            f.write(AVAHI_CONF.format(host=self.host_name, interface=self.interface))
        self.bus_log = open(os.path.join(self.dir, "dbus.log"), "w")
        self.popen(["dbus-daemon", "--nofork", "--config-file=" + os.path.join(self.dir, "bus.conf")],
                   stdout=self.bus_log, stderr=subprocess.STDOUT)
        for _ in range(100):
            if os.path.exists(self.bus):
                break
            time.sleep(0.05)
        # The daemon's pid file and socket are in /run/avahi-daemon: a tmpfs of this host's own
        # (ip netns exec gives each command its own mount namespace).
        script = ("mkdir -p /run/avahi-daemon && mount -t tmpfs none /run/avahi-daemon && "
                  "exec avahi-daemon --no-drop-root --no-chroot --no-rlimits -f " +
                  os.path.join(self.dir, "avahi.conf"))
        self.avahi_log = open(os.path.join(self.dir, "avahi.log"), "w")
        self.popen(["sh", "-c", script], stdout=self.avahi_log, stderr=subprocess.STDOUT)

    def wait_ready(self):
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with open(os.path.join(self.dir, "avahi.log")) as f:
                if "Server startup complete" in f.read():
                    return
            time.sleep(0.1)
        raise AssertionError(f"avahi-daemon on {self.netns} did not start:\n" +
                             open(os.path.join(self.dir, "avahi.log")).read())

    def stop(self):
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in reversed(self.procs):
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


class Lab:
    """Hosts a (10.0.0.1) and b (10.0.0.2) on one link; or, with one_host, host a alone, its
    link a veth pair whose both ends it holds."""

    def __init__(self, one_host=False):
        self.tag = f"rvd{os.getpid() % 100000}"
        self.dir = tempfile.mkdtemp(prefix="rdmavideo-dnssd-")
        self.a = Host(self, "a", "eth0", "10.0.0.1")
        self.b = None if one_host else Host(self, "b", "eth0", "10.0.0.2")
        self.hosts = [self.a] if one_host else [self.a, self.b]

    def __enter__(self):
        try:
            for h in self.hosts:
                _sh("ip", "netns", "add", h.netns)
                _sh("ip", "-n", h.netns, "link", "set", "lo", "up")
            if self.b is None:
                _sh("ip", "-n", self.a.netns, "link", "add", "eth0", "type", "veth", "peer", "name",
                    "eth1")
                _sh("ip", "-n", self.a.netns, "link", "set", "eth1", "up")
            else:
                _sh("ip", "link", "add", self.tag + "x", "netns", self.a.netns, "type", "veth",
                    "peer", "name", self.tag + "y", "netns", self.b.netns)
                for h, end in ((self.a, "x"), (self.b, "y")):
                    _sh("ip", "-n", h.netns, "link", "set", self.tag + end, "name", h.interface)
            for h in self.hosts:
                _sh("ip", "-n", h.netns, "addr", "add", h.address + "/24", "dev", h.interface)
                _sh("ip", "-n", h.netns, "link", "set", h.interface, "up")
            for h in self.hosts:
                h.start()
            for h in self.hosts:
                h.wait_ready()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        for h in self.hosts:
            h.stop()
            _sh("ip", "netns", "del", h.netns, check=False)
        shutil.rmtree(self.dir, ignore_errors=True)
