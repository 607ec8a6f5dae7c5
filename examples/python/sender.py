#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""rdmavideo from Python, sending: a moving RGBA picture made with numpy, with a 1 kHz tone,
as fast as the receiver takes it.

    sender.py [-n FRAMES] [-s WIDTHxHEIGHT] [--copy] [--once] HOST:PORT

Each frame is drawn into a buffer the sender lends (zero copy), or with --copy made as a numpy
array of its own and sent with send() (one copy, inside the library). --once draws each pool
buffer once, at its first use, as the C example's -1 does: what is measured is the sending."""

import argparse
import sys
import time

import numpy as np

import rdmavideo


def picture(n, height, width):
    y, x = np.ogrid[0:height, 0:width]
    frame = np.empty((height, width, 4), np.uint8)
    frame[..., 0] = (x + n * 4) & 255
    frame[..., 1] = (y + n * 2) & 255
    frame[..., 2] = ((x ^ y) + n) & 255
    frame[..., 3] = 255
    bar = (n * 8) % width
    frame[:, bar:bar + 16, :3] = 255
    return frame


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("destination")
    ap.add_argument("-n", "--frames", type=int, default=300)
    ap.add_argument("-s", "--size", default="1280x720")
    ap.add_argument("--copy", action="store_true", help="send numpy frames with send()")
    ap.add_argument("--once", action="store_true", help="draw each pool buffer once")
    a = ap.parse_args()
    width, height = map(int, a.size.split("x"))
    rate = 60
    with rdmavideo.Sender(a.destination, width, height, pix_fmt="rgba", fps=rate,
                          name="python example", checksum=True, colour="srgb") as s:
        track = s.start_audio(48000, 2, "f32", name="1 kHz")
        per_frame = 48000 // rate
        made = {}  # --once: the pictures drawn, by pool buffer
        start = time.monotonic()
        sent = 0
        for n in range(a.frames):
            t = (np.arange(per_frame) + n * per_frame) / 48000
            tone = (0.25 * np.sin(2 * np.pi * 1000 * t)).astype(np.float32)
            s.send_audio(np.repeat(tone[:, None], 2, axis=1), n * 1_000_000_000 // rate, track)
            if a.copy:
                if not a.once:
                    frame = picture(n, height, width)
                elif (frame := made.get(n % 4)) is None:
                    frame = made[n % 4] = picture(n, height, width)
                sent += s.send(frame)
            else:
                with s.lend() as b:
                    if not a.once or b.device_pointer not in made:
                        b.array[:] = picture(n, height, width)
                        made[b.device_pointer] = True
                    sent += b.submit()
            if s.receiver_ended:
                break
        seconds = time.monotonic() - start
        st = s.stats()
    print(f"sent {sent} frames of {width}x{height} rgba ({st['dropped']} dropped) in "
          f"{seconds:.2f} s: {st['bytes'] / seconds / 1e9:.2f} GB/s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
