#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that every include in the product points down.

A room is a source file with its header (x.cpp and x.hpp, or a public header
<lib>/include/rdmavideo/.../x.hpp and the one x.cpp of the same library that implements it);
a header of no source of its own that the room's source includes and that includes the room
back (a private header: recorder_impl.hpp, compositor_tile.hpp) is part of that room. Rooms
must include one another without a cycle: an include that closes one points up. And the
folders of codecs/src include one another only through src/ itself, never a sibling. And
the memory layer holds memory: no kernel (.cu), no arithmetic marked for the GPU
(RDMAVIDEO_HOST_DEVICE), and no code that names ProRes, the canvas or a pixel format; each
room's kernels live with the room (docs/architecture.md, "Where a kernel goes").

Usage: check-includes.py [REPOSITORY]; exit status 1 with each cycle or crossing named.
"""
import collections
import os
import re
import sys

FOLDERS = ["lib", "codecs", "media", "receiver", "sender", "gst-plugin", "obs-plugin", "doctor",
           "cli"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def main(root):
    files = []
    for folder in FOLDERS:
        for here, _, names in os.walk(os.path.join(root, folder)):
            for name in names:
                if name.endswith((".cpp", ".hpp", ".cu", ".cuh")):
                    files.append(os.path.relpath(os.path.join(here, name), root))
    known = set(files)
    # Where a quoted include may be found: the including file's folder, then these.
    roots = sorted({f.split("/include/")[0] + "/include" for f in files if "/include/" in f})
    roots += ["codecs/src", "media/src", "lib"]
    roots += [os.path.join("lib", d) for d in sorted(os.listdir(os.path.join(root, "lib")))]

    def resolve(source, name):
        here = os.path.normpath(os.path.join(os.path.dirname(source), name))
        if here in known:
            return here
        for r in roots:
            there = os.path.normpath(os.path.join(r, name))
            if there in known:
                return there
        return None  # a system or third-party header

    def library(f):
        parts = f.split("/")
        return "/".join(parts[:2]) if parts[0] == "lib" else parts[0]

    stem = lambda f: os.path.splitext(os.path.basename(f))[0]
    implementations = collections.defaultdict(list)
    for f in files:
        if f.endswith((".cpp", ".cu")) and "/include/" not in f:
            implementations[(library(f), stem(f))].append(f)

    def room(f):
        if "/include/" in f:
            impl = implementations.get((library(f), stem(f)), [])
            if len(impl) == 1:
                return os.path.splitext(impl[0])[0]
        return os.path.splitext(f)[0]

    includes = collections.defaultdict(set)  # file -> files it includes
    for f in files:
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as text:
            for line in text:
                m = INCLUDE.match(line)
                target = resolve(f, m.group(1)) if m else None
                if target:
                    includes[f].add(target)

    def room_edges(owner):
        edges = collections.defaultdict(set)
        for f, targets in includes.items():
            for t in targets:
                a, b = owner(f), owner(t)
                if a != b:
                    edges[a].add(b)
        return edges

    # Private headers: no source of their own, in a two-room cycle with the room that uses them.
    edges = room_edges(room)
    private = {}
    for f in files:
        if not f.endswith((".hpp", ".cuh")) or (library(f), stem(f)) in implementations:
            continue
        me = room(f)
        for other in edges.get(me, ()):
            if me in edges.get(other, ()):
                private[me] = other
    owner = lambda f: private.get(room(f), room(f))
    edges = room_edges(owner)

    problems = []
    # Tarjan's strongly connected components: each of more than one room is a cycle.
    index, low, on_stack, stack, counter = {}, {}, set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                problems.append("rooms that include one another (an include points up): " +
                                ", ".join(sorted(component)))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)

    def codecs_folder(f):
        parts = f.split("/")
        return parts[2] if len(parts) > 3 and parts[:2] == ["codecs", "src"] else None

    for f, targets in sorted(includes.items()):
        for t in sorted(targets):
            a, b = codecs_folder(f), codecs_folder(t)
            if a and b and a != b:
                problems.append(f"{f} includes {t}: codecs/src's folders meet only in src/")

    # The memory layer holds memory: its code (comments aside) names no codec, canvas or pixel
    # format, and it has no kernels of its own.
    concept = re.compile(r"\b\w*(prores|canvas|nv12|i420|p010|uyvy|yuy2|rgba|bgra|rgb24|yuv4\d\dp"
                         r"\w*|v210)\w*\b", re.IGNORECASE)
    for f in files:
        if not f.startswith("lib/memory/"):
            continue
        if f.endswith((".cu", ".cuh")):
            problems.append(f"{f}: a kernel in the memory layer (it goes with the room that owns it)")
            continue
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as text:
            for number, line in enumerate(text, 1):
                code = line.split("//")[0]
                m = concept.search(code)
                if "RDMAVIDEO_HOST_DEVICE" in code and not f.endswith("host_device.hpp"):
                    problems.append(f"{f}:{number}: GPU arithmetic in the memory layer")
                elif m:
                    problems.append(f"{f}:{number}: the memory layer names '{m.group(0)}'")

    for p in problems:
        print(p)
    print(f"{len(files)} files in {len(set(map(owner, files)))} rooms: "
          f"{len(problems)} problem{'s' if len(problems) != 1 else ''}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else
                  os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")))
