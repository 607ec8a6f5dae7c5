# SPDX-License-Identifier: Apache-2.0
"""rdmavideo's NMOS node as a controller and a registry meet it: every body of the Node API
(IS-04 v1.3) and the Connection API (IS-05 v1.1) checked against AMWA's own JSON schemas (read
from the specifications' folder, RDMAVIDEO_NMOS_SPECS, default ../shared/nmos beside the
project; those checks are skipped, saying so, where it is missing); bad requests get the status
and error body the specification gives; immediate and scheduled activations; registration with
a registry (node first, heartbeats, a registry that restarts, failover to the next by
priority, resources deleted on a clean stop); and an IS-05 activation that makes
rdmavideo-send --nmos stream into rdmavideo-recv --nmos.

Run by CTest with RDMAVIDEO_SEND and RDMAVIDEO_RECV set."""

import json
import os
import re
import socket
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

SEND = os.environ.get("RDMAVIDEO_SEND", "rdmavideo-send")
RECV = os.environ.get("RDMAVIDEO_RECV", "rdmavideo-recv")
HERE = os.path.dirname(os.path.abspath(__file__))
SPECS = os.environ.get("RDMAVIDEO_NMOS_SPECS",
                       os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "nmos")))
TRANSPORT = "urn:x-rdmavideo:transport:rdmavideo"

sys.path.insert(0, os.path.join(HERE, "..", "support"))
sys.path.insert(0, HERE)
from logged_process import Logged  # noqa: E402
from mock_registry import MockRegistry  # noqa: E402

try:
    import jsonschema
except ImportError:  # python3-jsonschema (scripts/setup.sh)
    jsonschema = None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(method, url, body=None):
    """(status, parsed JSON body or None)."""
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            text = r.read()
            return r.status, json.loads(text) if text else None
    except urllib.error.HTTPError as e:
        text = e.read()
        return e.code, json.loads(text) if text else None


class Schemas:
    """AMWA's schemas, with their $refs resolved from their own folder."""

    def __init__(self):
        self.missing = None
        if jsonschema is None:
            self.missing = "python3-jsonschema is not installed"
        elif not os.path.isdir(os.path.join(SPECS, "is-04", "APIs", "schemas")):
            self.missing = f"the NMOS specifications are not at {SPECS}"

    def check(self, test, spec, name, body):
        if self.missing:
            print(f"schema check of {name} skipped: {self.missing}")
            return
        folder = os.path.join(SPECS, spec, "APIs", "schemas")
        with open(os.path.join(folder, name)) as f:
            schema = json.load(f)
        resolver = jsonschema.RefResolver(base_uri="file://" + folder + "/", referrer=schema)
        try:
            jsonschema.Draft4Validator(schema, resolver=resolver).validate(body)
        except jsonschema.ValidationError as e:
            test.fail(f"{name}: {e.message} at {list(e.absolute_path)}\n{json.dumps(body)[:2000]}")


SCHEMAS = Schemas()


def program(args):
    """One of the programs, without DNS-SD (no responder is asked)."""
    return Logged(args, env=dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS="unix:path=/nonexistent"))


def node_url(program):
    return "http://" + program.wait_for(r"NMOS node at http://([^/]+)/x-nmos/").group(1)


class NodeApi(unittest.TestCase):
    """Both programs as nodes, peer-to-peer (no registry): their bodies against the schemas."""

    @classmethod
    def setUpClass(cls):
        cls.recv_port = free_port()
        cls.recv = program([RECV, "--listen", f"127.0.0.1:{cls.recv_port}", "--serve",
                            "--max-streams", "2", "--name", "studio", "--nmos", "127.0.0.1:0",
                            "--quiet"])
        cls.send = program([SEND, "--testsrc", "-s", "320x240", "-r", "30", "--realtime",
                            "--tone", "1000", "--name", "cam 1", "--nmos", "127.0.0.1:0"])
        cls.recv_url = node_url(cls.recv)
        cls.send_url = node_url(cls.send)

    @classmethod
    def tearDownClass(cls):
        cls.send.stop()
        cls.recv.stop()

    def get(self, url, schema=None, spec="is-04"):
        status, body = request("GET", url)
        self.assertEqual(status, 200, f"GET {url}: {body}")
        if schema:
            SCHEMAS.check(self, spec, schema, body)
        return body

    def test_every_node_api_body_meets_its_schema(self):
        for base in (self.recv_url, self.send_url):
            self.assertEqual(self.get(base + "/"), ["x-nmos/"])
            self.assertEqual(sorted(self.get(base + "/x-nmos/")), ["connection/", "node/"])
            self.assertEqual(self.get(base + "/x-nmos/node/"), ["v1.3/"])
            api = base + "/x-nmos/node/v1.3/"
            self.get(api, "nodeapi-base.json")
            node = self.get(api + "self", "node.json")
            self.assertEqual(node["api"]["versions"], ["v1.3"])
            self.assertEqual(node["api"]["endpoints"][0]["port"], int(base.rsplit(":", 1)[1]))
            for plural, single in (("devices", "device"), ("sources", "source"), ("flows", "flow"),
                                   ("senders", "sender"), ("receivers", "receiver")):
                for r in self.get(api + plural, plural + ".json"):
                    self.assertEqual(self.get(api + plural + "/" + r["id"], single + ".json"), r)
                    if plural in ("senders", "receivers"):
                        self.assertEqual(r["transport"], TRANSPORT)
        recv_api = self.recv_url + "/x-nmos/node/v1.3/"
        self.assertEqual(len(self.get(recv_api + "receivers")), 2)  # one per --max-streams
        send_api = self.send_url + "/x-nmos/node/v1.3/"
        flows = self.get(send_api + "flows")
        video = [f for f in flows if f["format"] == "urn:x-nmos:format:video"][0]
        self.assertEqual((video["frame_width"], video["frame_height"]), (320, 240))
        self.assertEqual(video["grain_rate"], {"numerator": 30, "denominator": 1})
        self.assertEqual([c["name"] for c in video["components"]], ["Y", "Cb", "Cr"])
        self.assertEqual(video["components"][1]["width"], 160)  # 4:2:2
        sounds = [f for f in flows if f["format"] == "urn:x-nmos:format:audio"]
        self.assertEqual(len(sounds), 1)  # --tone: the sound beside the picture
        device = self.get(send_api + "devices")[0]
        self.assertEqual(device["controls"][0]["type"], "urn:x-nmos:control:sr-ctrl/v1.1")
        self.assertTrue(device["controls"][0]["href"].endswith("/x-nmos/connection/v1.1/"))

    def test_every_connection_api_body_meets_its_schema(self):
        for base, kind in ((self.send_url, "sender"), (self.recv_url, "receiver")):
            api = base + "/x-nmos/connection/v1.1/"
            self.get(api, "connectionapi-base.json", "is-05")
            self.get(api + "single/", "connectionapi-single.json", "is-05")
            for rid in self.get(api + f"single/{kind}s/"):
                one = api + f"single/{kind}s/" + rid
                self.get(one, f"connectionapi-{kind}.json", "is-05")
                constraints = self.get(one + "constraints", "constraints-schema.json", "is-05")
                staged = self.get(one + "staged", f"{kind}-response-schema.json", "is-05")
                active = self.get(one + "active", f"{kind}-response-schema.json", "is-05")
                # Every parameter constrained is staged and active, and nothing is left "auto".
                self.assertEqual(sorted(constraints[0]), sorted(staged["transport_params"][0]))
                self.assertEqual(sorted(constraints[0]), sorted(active["transport_params"][0]))
                self.assertNotIn("auto", active["transport_params"][0].values())
                self.assertEqual(self.get(one + "transporttype"), TRANSPORT)
            if kind == "sender":
                status, body = request("GET", one + "transportfile")
                self.assertEqual(status, 404)
                SCHEMAS.check(self, "is-05", "error.json", body)

    def test_bad_requests_get_the_status_and_body_the_spec_gives(self):
        api = self.send_url + "/x-nmos/connection/v1.1/"
        sid = self.get(api + "single/senders/")[0].rstrip("/")
        staged = api + "single/senders/" + sid + "/staged"
        bad = [
            (b"{not json", 400, "not JSON"),
            ({"master_enable": "yes"}, 400, "master_enable"),
            ({"colour": 1}, 400, "not a key"),
            ({"transport_params": [{}, {}]}, 400, "2 legs"),
            ({"transport_params": [{"no_such": 1}]}, 400, "no_such"),
            ({"transport_params": [{"ext_transport": "udp"}]}, 400, "not one of"),
            ({"transport_params": [{"destination_port": 0}]}, 400, "minimum"),
            ({"transport_params": [{"destination_ip": "nowhere"}]}, 400, "not an IP"),
            ({"receiver_id": "not-an-id"}, 400, "receiver_id"),
            ({"activation": {"mode": "now"}}, 400, "mode"),
            ({"activation": {"mode": "activate_scheduled_relative"}}, 400, "requested_time"),
            ({"activation": {"mode": "activate_scheduled_absolute", "requested_time": "99999999999:0"}},
             400, "requested_time"),
        ]
        for body, code, says in bad:
            status, reply = request("PATCH", staged, body)
            self.assertEqual(status, code, f"{body}: {reply}")
            SCHEMAS.check(self, "is-05", "error.json", reply)
            self.assertIn(says, reply["error"])
        status, reply = request("PATCH", api + "single/senders/" + "0" * 8 + "-0000-5000-8000-" + "0" * 12
                                + "/staged", {"master_enable": False})
        self.assertEqual(status, 404)
        status, reply = request("PUT", staged, {})
        self.assertEqual(status, 405)
        status, reply = request("GET", self.send_url + "/x-nmos/node/v1.3/senders/nope")
        self.assertEqual(status, 404)
        SCHEMAS.check(self, "is-04", "error.json", reply)
        status, reply = request("GET", self.send_url + "/x-nmos/node/v1.2/self")
        self.assertEqual(status, 404)
        # Nothing above changed the sender.
        self.assertFalse(self.get(staged)["master_enable"])

    def test_scheduled_activation_and_the_lock_while_it_waits(self):
        api = self.recv_url + "/x-nmos/connection/v1.1/single/receivers/"
        rid = self.get(api)[1].rstrip("/")
        staged = api + rid + "/staged"
        sender_id = "a" * 8 + "-aaaa-5aaa-8aaa-" + "a" * 12
        status, reply = request("PATCH", staged, {
            "sender_id": sender_id, "master_enable": True,
            "activation": {"mode": "activate_scheduled_relative", "requested_time": "0:500000000"}})
        self.assertEqual(status, 202, reply)
        SCHEMAS.check(self, "is-05", "receiver-response-schema.json", reply)
        self.assertEqual(reply["activation"]["mode"], "activate_scheduled_relative")
        # While it waits, only a cancel is taken.
        status, reply = request("PATCH", staged, {"master_enable": False})
        self.assertEqual(status, 423, reply)
        active = wait(lambda: (lambda a: a if a["master_enable"] else None)(self.get(api + rid + "/active")),
                      5, "the scheduled activation happens")
        self.assertEqual(active["sender_id"], sender_id)
        self.assertEqual(active["activation"]["mode"], "activate_scheduled_relative")
        self.assertIsNone(self.get(staged)["activation"]["mode"])  # staged again afterwards
        receiver = self.get(self.recv_url + "/x-nmos/node/v1.3/receivers/" + rid, "receiver.json")
        self.assertEqual(receiver["subscription"], {"sender_id": sender_id, "active": True})
        # A scheduled absolute activation far away, cancelled: nothing happens.
        status, reply = request("PATCH", staged, {
            "master_enable": False, "activation": {"mode": "activate_scheduled_absolute",
                                                   "requested_time": "4000000000:0"}})
        self.assertEqual(status, 202, reply)
        status, reply = request("PATCH", staged, {"activation": {"mode": None}})
        self.assertEqual(status, 200, reply)
        self.assertTrue(self.get(api + rid + "/active")["master_enable"])

    def test_bulk(self):
        api = self.recv_url + "/x-nmos/connection/v1.1/"
        ids = [i.rstrip("/") for i in self.get(api + "single/receivers/")]
        status, reply = request("POST", api + "bulk/receivers", [
            {"id": ids[0], "params": {"master_enable": False}},
            {"id": ids[1], "params": {"master_enable": "no"}},
            {"id": "b" * 8 + "-bbbb-5bbb-8bbb-" + "b" * 12, "params": {}}])
        self.assertEqual(status, 200, reply)
        SCHEMAS.check(self, "is-05", "bulk-response-schema.json", reply)
        self.assertEqual([r["code"] for r in reply], [200, 400, 404])
        status, _ = request("GET", api + "bulk/receivers")
        self.assertEqual(status, 405)


def wait(check, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(what + f" within {seconds} s")


class Registration(unittest.TestCase):
    def test_registers_heartbeats_comes_back_after_a_restart_fails_over_and_deletes(self):
        first, second = MockRegistry(), MockRegistry()
        send = program([SEND, "--testsrc", "-s", "64x64", "--name", "reg cam", "--nmos", "127.0.0.1:0",
                        "--nmos-registry", first.url, "--nmos-registry", second.url])
        try:
            send.wait_for("registered with " + re.escape(first.url))
            resources, posts, _, _ = first.snapshot()
            types = [p[0] for p in posts]
            self.assertEqual(types[0], "node")  # the node first
            self.assertEqual(sorted(set(types)), ["device", "flow", "node", "sender", "source"])
            self.assertTrue(all(p[3] == "application/json" for p in posts))
            for (kind, _), data in resources.items():
                SCHEMAS.check(self, "is-04", kind + ".json", data)
            node_id = [i for (k, i) in resources if k == "node"][0]
            # Heartbeats, every 5 s.
            beats = wait(lambda: (lambda h: h if len(h) >= 2 else None)(first.snapshot()[3]), 15,
                         "two heartbeats")
            self.assertTrue(all(b[0] == node_id for b in beats))
            self.assertAlmostEqual(beats[1][1] - beats[0][1], 5.0, delta=1.0)
            # The registry restarts, forgetting the node: a 404 to the heartbeat, and the node
            # registers again, node first.
            before = len(first.snapshot()[1])
            first.forget()
            wait(lambda: len(first.snapshot()[0]) >= 4, 15, "registered again after a 404")
            self.assertEqual(first.snapshot()[1][before][0], "node")
            # The registry goes: the node moves to the next.
            first.close()
            send.wait_for("registered with " + re.escape(second.url), 20)
            self.assertIn(("node", node_id), second.snapshot()[0])
            # A clean stop deletes what it registered.
            self.assertEqual(send.stop(), 0)
            resources, _, deletes, _ = second.snapshot()
            self.assertEqual(resources, {}, deletes)
            self.assertEqual(deletes[-1], ("node", node_id))  # the node last
        finally:
            send.stop()
            second.close()


class Activation(unittest.TestCase):
    def test_an_activation_makes_a_sender_stream_into_a_receiver(self):
        recv_port = free_port()
        stats = tempfile.NamedTemporaryFile(suffix=".json", delete=False).name
        recv = program([RECV, "--listen", f"127.0.0.1:{recv_port}", "--name", "recorder",
                        "--nmos", "127.0.0.1:0", "--verify", "--stats-json", stats])
        send = program([SEND, "--testsrc", "-s", "320x240", "-r", "60", "--realtime", "--checksum",
                        "--name", "cam", "--nmos", "127.0.0.1:0"])
        try:
            rapi = node_url(recv) + "/x-nmos/"
            sapi = node_url(send) + "/x-nmos/"
            receiver = request("GET", rapi + "node/v1.3/receivers")[1][0]
            sender = request("GET", sapi + "node/v1.3/senders")[1][0]
            # The controller reads the receiver's address from its /active, and connects the two.
            rleg = request("GET", rapi + f"connection/v1.1/single/receivers/{receiver['id']}/active")[1]
            rleg = rleg["transport_params"][0]
            self.assertEqual(rleg["destination_port"], recv_port)
            status, reply = request("PATCH", rapi + f"connection/v1.1/single/receivers/{receiver['id']}/staged",
                                    {"sender_id": sender["id"], "master_enable": True,
                                     "activation": {"mode": "activate_immediate"}})
            self.assertEqual(status, 200, reply)
            status, reply = request("PATCH", sapi + f"connection/v1.1/single/senders/{sender['id']}/staged",
                                    {"receiver_id": receiver["id"], "master_enable": True,
                                     "transport_params": [{"destination_ip": rleg["interface_ip"],
                                                           "destination_port": recv_port,
                                                           "ext_transport": "tcp"}],
                                     "activation": {"mode": "activate_immediate"}})
            self.assertEqual(status, 200, reply)
            recv.wait_for(r'stream 1 ring')
            sub = request("GET", sapi + f"node/v1.3/senders/{sender['id']}")[1]["subscription"]
            self.assertEqual(sub, {"receiver_id": receiver["id"], "active": True})
            sub = request("GET", rapi + f"node/v1.3/receivers/{receiver['id']}")[1]["subscription"]
            self.assertEqual(sub, {"sender_id": sender["id"], "active": True})
            time.sleep(1)
            # Disabled: the stream ends cleanly, and the receiver (one stream) finishes.
            status, reply = request("PATCH", sapi + f"connection/v1.1/single/senders/{sender['id']}/staged",
                                    {"master_enable": False, "activation": {"mode": "activate_immediate"}})
            self.assertEqual(status, 200, reply)
            self.assertEqual(recv.proc.wait(timeout=20), 0, recv.text())
            self.assertIn("the sender ended it", recv.text())
            with open(stats) as f:
                got = json.load(f)
            self.assertGreater(got["frames"], 30)
            self.assertEqual(got["checksum_failures"], 0)
            sub = request("GET", sapi + f"node/v1.3/senders/{sender['id']}")[1]["subscription"]
            self.assertEqual(sub["active"], False)
        finally:
            send.stop()
            recv.stop()


if __name__ == "__main__":
    unittest.main()
