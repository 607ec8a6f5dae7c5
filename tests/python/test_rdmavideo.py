# SPDX-License-Identifier: Apache-2.0
"""The Python module (python/rdmavideo) against the project's own programs: a Python sender's
frames arrive byte for byte in rdmavideo-recv's raw output, rdmavideo-send --testsrc's frames
arrive byte for byte in a Python receiver (beside rdmavideo-recv, by fan-out), audio goes
through both ways, and errors raise with the library's message.

Run by CTest with RDMAVIDEO_LIBRARY, RDMAVIDEO_SEND and RDMAVIDEO_RECV set, and the module
on PYTHONPATH (or installed)."""

import os
import re
import subprocess
import tempfile
import threading
import time
import unittest

import numpy as np

import rdmavideo

SEND = os.environ.get("RDMAVIDEO_SEND", "rdmavideo-send")
RECV = os.environ.get("RDMAVIDEO_RECV", "rdmavideo-recv")


def start_recv(*args):
    """rdmavideo-recv on a free loopback port: (process, port, log path)."""
    log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
    proc = subprocess.Popen([RECV, "--listen", "127.0.0.1:0", "--quiet", *args],
                            stdout=subprocess.DEVNULL, stderr=log)
    for _ in range(100):
        with open(log.name) as f:
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", f.read())
        if m:
            return proc, int(m.group(1)), log.name
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("rdmavideo-recv did not say where it listens")


def frame_of(n, height, width):
    """Frame n: every byte a function of n and its place."""
    y, x = np.mgrid[0:height, 0:width]
    return np.stack([(x + n) & 255, (y * 3 + n) & 255, (x ^ y) & 255,
                     np.full_like(x, n & 255)], axis=-1).astype(np.uint8)


class PythonSender(unittest.TestCase):
    def test_frames_arrive_byte_for_byte_in_rdmavideo_recv(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "frames.raw")
            proc, port, log = start_recv("--output", out, "--verify")
            width, height, count = 320, 180, 24
            with rdmavideo.Sender(f"127.0.0.1:{port}", width, height, pix_fmt="rgba", fps=60,
                                  name="py", checksum=True) as s:
                self.assertEqual(s.frame_bytes, width * height * 4)
                for n in range(count):
                    if n % 2:
                        self.assertTrue(s.send(frame_of(n, height, width)))
                    else:  # zero copy: drawn in the buffer it is sent from
                        with s.lend() as b:
                            b.array[:] = frame_of(n, height, width)
                            self.assertTrue(b.submit())
                stats = s.stats()
            self.assertEqual(proc.wait(30), 0, open(log).read())
            self.assertEqual(stats["frames"], count)
            data = np.fromfile(out, dtype=np.uint8)
            self.assertEqual(data.size, count * width * height * 4)
            frames = data.reshape(count, height, width, 4)
            for n in range(count):
                np.testing.assert_array_equal(frames[n], frame_of(n, height, width),
                                              err_msg=f"frame {n}")
            self.assertIn("checksum failures 0", open(log).read())

    def test_a_frame_of_the_wrong_size_is_refused_saying_both_sizes(self):
        receiver = rdmavideo.Receiver("127.0.0.1:0")
        with rdmavideo.Sender(f"127.0.0.1:{receiver.port}", 64, 48) as s:
            with self.assertRaises(rdmavideo.Error) as e:
                s.send(np.zeros((48, 64, 3), np.uint8))
            self.assertIn("12288 bytes", str(e.exception))
            self.assertIn("9216", str(e.exception))
        receiver.close()


class PythonReceiver(unittest.TestCase):
    def test_testsrc_frames_arrive_byte_for_byte_beside_rdmavideo_recv(self):
        """rdmavideo-send --testsrc to rdmavideo-recv (raw output) and to a Python receiver at
        once: the same frames, byte for byte."""
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "frames.raw")
            proc, port, log = start_recv("--output", out)
            received = []
            with rdmavideo.Receiver("127.0.0.1:0", verify=True) as r:
                def take():
                    for f in r:
                        received.append((f.sequence, f.pix_fmt, f.width, f.height,
                                         np.array(f.array)))
                t = threading.Thread(target=take)
                t.start()
                send = subprocess.run(
                    [SEND, "--connect", f"127.0.0.1:{port}", "--connect",
                     f"127.0.0.1:{r.port}", "--testsrc", "-s", "256x144", "--pix-fmt", "uyvy422",
                     "--frames", "30", "--checksum", "--quiet"],
                    capture_output=True, text=True, timeout=60)
                self.assertEqual(send.returncode, 0, send.stderr)
                t.join(30)
                stats = r.stats()
            self.assertEqual(proc.wait(30), 0, open(log).read())
            self.assertEqual(len(received), 30)
            self.assertEqual(stats["checksum_failures"], 0)
            raw = np.fromfile(out, dtype=np.uint8).reshape(30, 144, 256, 2)
            for n, (sequence, pix_fmt, width, height, array) in enumerate(received):
                self.assertEqual((sequence, pix_fmt, width, height), (n, "uyvy422", 256, 144))
                np.testing.assert_array_equal(array, raw[n], err_msg=f"frame {n}")
            # The pattern moves: not every frame the same.
            self.assertFalse(np.array_equal(received[0][4], received[15][4]))

    def test_audio_goes_through_with_its_track(self):
        with rdmavideo.Receiver("127.0.0.1:0") as r:
            chunks, frames = [], []
            t1 = threading.Thread(target=lambda: chunks.extend(r.chunks()))
            t2 = threading.Thread(target=lambda: frames.extend(f.sequence for f in r))
            t1.start()
            t2.start()
            with rdmavideo.Sender(f"127.0.0.1:{r.port}", 64, 48) as s:
                track = s.start_audio(48000, 2, "s16", name="ramp")
                ramp = np.arange(4800 * 2, dtype=np.int16).reshape(4800, 2)
                for k in range(10):
                    s.send_audio(ramp[k * 480:(k + 1) * 480], k * 10_000_000, track)
                    s.send(np.zeros((48, 64, 4), np.uint8))
                s.end_audio(track)
            t1.join(30)
            t2.join(30)
        self.assertEqual(frames, list(range(10)))
        got = np.concatenate([c.samples for c in chunks])
        np.testing.assert_array_equal(got, ramp)
        self.assertEqual({(c.track, c.name, c.sample_format) for c in chunks}, {(0, "ramp", "s16")})

    def test_errors_raise_with_the_librarys_message(self):
        with self.assertRaises(rdmavideo.Error) as e:
            rdmavideo.Receiver("127.0.0.1:0", ring_slots=0)
        self.assertEqual(e.exception.status, "RDMAVIDEO_ERROR_INVALID_ARGUMENT")
        self.assertIn("ring_slots 0", str(e.exception))
        with rdmavideo.Receiver("127.0.0.1:0") as r:
            self.assertIsNone(r.next_frame(timeout=0.05))
            with self.assertRaises(rdmavideo.Error) as e:
                rdmavideo.Sender(f"127.0.0.1:{r.port}", 64, 48, pix_fmt="rgb565")
            self.assertIn("pix_fmt \"rgb565\" unknown", str(e.exception))


if __name__ == "__main__":
    unittest.main()
