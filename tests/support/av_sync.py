#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Measures what a person hears against what they see in a recording: the picture's white
flashes against the audio's beeps (rdmavideo-send --testsrc --tone HZ, or a clip made the same
way), decoded with ffmpeg as any player would.

  av_sync.py FILE [--audio N] [--crop W:H:X:Y] [--summary]

Prints, for the audio track N (default 0) against the first video stream:
  flashes, beeps          how many of each
  offsets_ms              beep minus its nearest flash, for every beep
  max_abs_offset_ms       the worst of them
  unmatched_beeps         beeps with no flash within half a second (the flash frame was dropped)
  max_abs_matched_ms      the worst offset of the others
  frame_ms                the video's frame period
  tone_hz                 the beeps' frequency, from their zero crossings
  video_s, audio_s        each stream's duration as decoded (start time plus samples or frames)

A flash is a frame whose mean luma (within --crop, FFmpeg's crop filter, when given: the part
of a composed picture a source fills) is near white; a beep begins at the first sample above
BEEP_LEVEL after at least half a second below it. The flash is the first frame at or after the
beep's instant, so a recording in sync has every offset within one frame period.
"""
import argparse
import array
import json
import subprocess
import sys

BEEP_LEVEL = 0.2     # the beep is at 0.5 (-6 dBFS); the quiet tone between at 0.01
QUIET_BEFORE_S = 0.5
FLASH_LUMA = 200     # white is 235 (limited range), the pattern's brightest bar about 180


def run(args, binary=False):
    out = subprocess.run(args, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return out.stdout if binary else out.stdout.decode()


def probe(path, stream, entries):
    text = run(["ffprobe", "-v", "error", "-select_streams", stream, "-show_entries",
                "stream=" + entries, "-of", "json", path])
    streams = json.loads(text).get("streams", [])
    if not streams:
        raise SystemExit(f"{path}: no stream {stream}")
    return streams[0]


def video_frames(path, crop=None):
    """(pts in seconds, mean luma) of every frame of the first video stream, or of its
    `crop` (W:H:X:Y)."""
    text = run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pts_time",
                "-of", "csv=p=0", path])
    times = [float(line.split(",")[0]) for line in text.splitlines() if line.split(",")[0] not in ("", "N/A")]
    raw = run(["ffmpeg", "-nostdin", "-v", "error", "-i", path, "-map", "0:v:0", "-fps_mode", "passthrough",
               "-vf", ("crop=" + crop + "," if crop else "") + "scale=8:8,format=gray", "-f", "rawvideo", "-"],
              binary=True)
    lumas = [sum(raw[i:i + 64]) / 64 for i in range(0, len(raw), 64)]
    n = min(len(times), len(lumas))
    return list(zip(times[:n], lumas[:n]))


def audio_samples(path, track):
    info = probe(path, f"a:{track}", "sample_rate,start_time")
    rate = int(info["sample_rate"])
    start = float(info.get("start_time", 0) or 0)
    raw = run(["ffmpeg", "-nostdin", "-v", "error", "-i", path, "-map", f"0:a:{track}", "-ac", "1",
               "-f", "f32le", "-"], binary=True)
    samples = array.array("f")
    samples.frombytes(raw[: len(raw) // 4 * 4])
    if sys.byteorder != "little":
        samples.byteswap()
    return rate, start, samples


def beeps(rate, start, samples):
    """Onset times (s) of the beeps, and the beeps' frequency from their zero crossings."""
    onsets = []
    quiet = int(QUIET_BEFORE_S * rate)
    since_loud = quiet  # the file may begin with a beep
    crossings = 0
    counted_s = 0.0
    for i, v in enumerate(samples):
        if abs(v) > BEEP_LEVEL:
            if since_loud >= quiet:
                onsets.append(i)
            since_loud = 0
        else:
            since_loud += 1
    for onset in onsets:
        # 80 ms from 5 ms in: inside the 100 ms beep, clear of its edges.
        a, b = onset + int(0.005 * rate), onset + int(0.085 * rate)
        if b >= len(samples):
            continue
        crossings += sum(1 for j in range(a, b) if (samples[j] < 0) != (samples[j + 1] < 0))
        counted_s += (b - a) / rate
    tone = crossings / 2 / counted_s if counted_s else 0.0
    return [start + i / rate for i in onsets], tone


def measure(path, track=0, crop=None):
    frames = video_frames(path, crop)
    vinfo = probe(path, "v:0", "r_frame_rate,avg_frame_rate")
    num, den = (int(x) for x in vinfo["r_frame_rate"].split("/"))
    frame_s = den / num
    flashes = [t for t, luma in frames if luma >= FLASH_LUMA]
    rate, start, samples = audio_samples(path, track)
    onsets, tone = beeps(rate, start, samples)
    offsets = []
    # A beep after the last frame began has no flash to show it.
    last = frames[-1][0] if frames else 0.0
    onsets = [b for b in onsets if b <= last]
    for b in onsets:
        nearest = min(flashes, key=lambda f: abs(f - b)) if flashes else None
        if nearest is not None:
            offsets.append((b - nearest) * 1000)
    # A beep whose flash frame was dropped (a sender or receiver short of CPU) has none near it.
    matched = [o for o in offsets if abs(o) < 500]
    return {
        "flashes": len(flashes),
        "beeps": len(onsets),
        "offsets_ms": [round(o, 3) for o in offsets],
        "max_abs_offset_ms": round(max((abs(o) for o in offsets), default=0.0), 3),
        "unmatched_beeps": len(offsets) - len(matched),
        "max_abs_matched_ms": round(max((abs(o) for o in matched), default=0.0), 3),
        "frame_ms": round(frame_s * 1000, 3),
        "tone_hz": round(tone, 1),
        "video_s": round(frames[-1][0] + frame_s, 4) if frames else 0.0,
        "audio_s": round(start + len(samples) / rate, 4),
        "audio_start_s": round(start, 4),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file")
    parser.add_argument("--audio", type=int, default=0, help="audio track (default 0)")
    parser.add_argument("--crop", help="measure the flashes in this part of the picture (W:H:X:Y)")
    parser.add_argument("--summary", action="store_true", help="one line for a person, not JSON")
    args = parser.parse_args()
    m = measure(args.file, args.audio, args.crop)
    if args.summary:
        dropped = (f"; {m['unmatched_beeps']} beeps had no flash: their frames were dropped, "
                   f"not out of sync" if m["unmatched_beeps"] else "")
        print(f"{m['beeps']} beeps on {m['flashes']} flashes, worst {m['max_abs_matched_ms']:.2f} ms apart "
              f"(a frame is {m['frame_ms']:.2f} ms){dropped}, tone {m['tone_hz']:.0f} Hz, "
              f"video {m['video_s']:.3f} s, audio {m['audio_s']:.3f} s")
    else:
        print(json.dumps(m))


if __name__ == "__main__":
    main()
