#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What the OBS tests and bench share: a virtual screen (Xvfb on a display number it picks
itself) and the flash clip (white flashes on black, each with a beep on the same instant),
whose sync tests/support/av_sync.py measures."""
import os
import subprocess


class VirtualScreen:
    """Xvfb on a free display (-displayfd); `display` is ":N"."""

    def __init__(self, size="1280x720"):
        r, w = os.pipe()
        self.proc = subprocess.Popen(["Xvfb", "-displayfd", str(w), "-screen", "0", size + "x24", "-nolisten", "tcp"],
                                     pass_fds=(w,), stderr=subprocess.DEVNULL)
        os.close(w)
        number = b""
        while not number.endswith(b"\n"):
            c = os.read(r, 1)
            if not c:
                break
            number += c
        os.close(r)
        if not number.strip():
            raise RuntimeError("Xvfb did not start")
        self.display = ":" + number.decode().strip()

    def close(self):
        self.proc.terminate()
        self.proc.wait()


def flash_clip(path, hz=1000, seconds=10):
    """320x180 at 30 fps, H.264 lossless and AAC: a white frame and a beep of `hz` at every
    whole second, black and a quiet tone between."""
    beep = f"if(lt(mod(t\\,1)\\,0.1)\\,0.5\\,0.01)*sin(2*PI*{hz}*t)"
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
                    "color=c=black:s=320x180:r=30,format=yuv420p,geq=lum='if(lt(mod(N\\,30)\\,1)\\,235\\,16)':cb=128:cr=128",
                    "-f", "lavfi", "-i", f"aevalsrc='{beep}|{beep}':s=48000", "-t", str(seconds), "-c:v", "libx264",
                    "-preset", "ultrafast", "-qp", "0", "-c:a", "aac", "-b:a", "192k", str(path)], check=True)


if __name__ == "__main__":
    # media_rig.py clip PATH [HZ]: the flash clip, for the C++ tests and the demo.
    import sys

    if len(sys.argv) < 3 or sys.argv[1] != "clip":
        sys.exit("usage: media_rig.py clip PATH [HZ]")
    flash_clip(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 1000)
