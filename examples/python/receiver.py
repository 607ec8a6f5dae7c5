#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""rdmavideo from Python, receiving: every frame read in its ring slot as a numpy array (no
copy), its SHA-256 written down, until every stream taken has ended.

    receiver.py HOST:PORT [CHECKSUMS]

CHECKSUMS gets "SEQUENCE SHA256" for every frame."""

import hashlib
import sys

import rdmavideo


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = open(sys.argv[2], "w") if len(sys.argv) > 2 else None
    with rdmavideo.Receiver(sys.argv[1], verify=True) as r:
        print(f"listening on port {r.port}", flush=True)
        frames = 0
        for f in r:
            frames += 1
            if out:
                out.write(f"{f.sequence} {hashlib.sha256(f.data).hexdigest()}\n")
        st = r.stats()
    print(f"received {frames} frames in {st['streams']} stream(s), "
          f"{st['checksum_failures']} checksum failures", flush=True)
    return 0 if st["checksum_failures"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
