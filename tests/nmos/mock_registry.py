# SPDX-License-Identifier: Apache-2.0
"""An NMOS Registration API (IS-04 v1.3) of the tests' own, in the test's process (imported)
or as a program of its own on a test host (`python3 mock_registry.py HOST`: it says
"registry at URL" and then each request it answers, on stderr, until SIGTERM)."""

import http.server
import json
import re
import signal
import sys
import threading
import time


class MockRegistry:
    """A Registration API (v1.3) of the test's own: it records what is posted, answers
    heartbeats for the nodes it holds (404 for others), and can forget everything (a restart)
    or stop answering (a failure)."""

    def __init__(self, host="127.0.0.1", said=None):
        """On `host`, any free port; `said(line)` is told of each request as it is answered."""
        self.said = said or (lambda line: None)
        self.lock = threading.Lock()
        self.resources = {}  # (type, id) -> data
        self.posts = []      # (type, id, status) in order
        self.deletes = []
        self.heartbeats = []
        registry = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def reply(self, code, body=None):
                data = json.dumps(body).encode() if body is not None else b""
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(length)
                base = "/x-nmos/registration/v1.3"
                with registry.lock:
                    if self.path == base + "/resource":
                        r = json.loads(body)
                        key = (r["type"], r["data"]["id"])
                        code = 200 if key in registry.resources else 201
                        registry.resources[key] = r["data"]
                        registry.posts.append((r["type"], r["data"]["id"], code,
                                               self.headers.get("Content-Type")))
                        registry.said(f"POST {r['type']} {r['data']['id']} {code}")
                        return self.reply(code, r["data"])
                    m = re.match(base + r"/health/nodes/(.+)$", self.path)
                    if m:
                        registry.heartbeats.append((m.group(1), time.monotonic()))
                        registry.said(f"HEARTBEAT {m.group(1)}")
                        if ("node", m.group(1)) in registry.resources:
                            return self.reply(200, {"health": str(int(time.time()))})
                        return self.reply(404, {"code": 404, "error": "no such node", "debug": None})
                self.reply(404, {"code": 404, "error": "not found", "debug": None})

            def do_DELETE(self):
                m = re.match(r"/x-nmos/registration/v1.3/resource/(\w+)s/(.+)$", self.path)
                with registry.lock:
                    if m:
                        registry.deletes.append((m.group(1), m.group(2)))
                        registry.said(f"DELETE {m.group(1)} {m.group(2)}")
                        registry.resources.pop((m.group(1), m.group(2)), None)
                self.reply(204)

        self.server = http.server.ThreadingHTTPServer((host, 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://{host}:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def forget(self):
        with self.lock:
            self.resources.clear()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def snapshot(self):
        with self.lock:
            return dict(self.resources), list(self.posts), list(self.deletes), list(self.heartbeats)


if __name__ == "__main__":
    def said(line):
        print(line, file=sys.stderr, flush=True)

    registry = MockRegistry(sys.argv[1], said)
    said("registry at " + registry.url)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stop.wait()
    registry.close()
