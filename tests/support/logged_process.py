# SPDX-License-Identifier: Apache-2.0
"""A program under test whose stderr goes to a file, read as it goes: the Python tests'
way to start rdmavideo-recv and rdmavideo-send and wait for what they say."""

import re
import signal
import subprocess
import tempfile
import time


class Logged:
    def __init__(self, args, popen=subprocess.Popen, env=None):
        """Starts `args` with `popen` (subprocess.Popen, or a test host's own)."""
        self.log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
        self.proc = popen(args, stdout=subprocess.DEVNULL, stderr=self.log, env=env)

    def text(self):
        with open(self.log.name) as f:
            return f.read()

    def wait_for(self, pattern, seconds=15):
        """The first match of `pattern` in what it said, waiting up to `seconds`; an
        AssertionError with its log when it never says it (or exits first)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            m = re.search(pattern, self.text())
            if m:
                return m
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"{self.proc.args[0]} never said /{pattern}/:\n{self.text()}")

    def stop(self):
        """SIGTERM, as a user stops it; its exit code (killed after 20 s)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()
