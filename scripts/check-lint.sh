#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs clang-tidy's curated checks (.clang-tidy) over the product's C++ sources (not the tests)
# with the compile commands of a configured and built folder (build/, or $BUILD_DIR), several
# files at a time. Any finding fails the run; a finding that is a false positive is silenced
# where it is, with NOLINT(check) and the reason.
#
# A file that passed is remembered under $RDMAVIDEO_LINT_CACHE (default
# ~/.cache/rdmavideo-lint) by a hash of what clang-tidy saw: its compile command, the file and
# every header it includes (ninja's dependency list), .clang-tidy and clang-tidy's version. Such
# a file is not linted again until one of those changes, so a run after a small change takes
# seconds; a clean cache lints everything (about 5 minutes on two cores for a unity build's
# sources, 13 for one file at a time). --all ignores the cache. RDMAVIDEO_LINT_JOBS: how many
# files at a time (default: one a core).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
[ -f "$build_dir/compile_commands.json" ] ||
  { echo "check-lint: no $build_dir/compile_commands.json (run scripts/build.sh first)" >&2; exit 2; }
exec python3 - "$build_dir" "$@" <<'PY'
import concurrent.futures, hashlib, json, os, shlex, subprocess, sys

build_dir = sys.argv[1]
use_cache = "--all" not in sys.argv[2:]
root = os.getcwd()
product = ("lib/", "sdk/", "codecs/", "media/", "cli/", "sender/", "receiver/", "doctor/",
           "gst-plugin/", "obs-plugin/")
cache = os.environ.get("RDMAVIDEO_LINT_CACHE") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "rdmavideo-lint")
os.makedirs(cache, exist_ok=True)

# The sources the build compiles, under the product's folders (a part not built here, such as
# one whose library is missing, is not linted), with the object each compiles to. A unity build
# compiles a target's files several to a source that includes them: that source is linted,
# once for all of them, and its findings in them are reported (HeaderFilterRegex).
entries, covered = {}, set()
for e in json.load(open(os.path.join(build_dir, "compile_commands.json"))):
    f = os.path.relpath(os.path.join(e["directory"], e["file"]), root)
    if "/Unity/unity_" in f:
        # A product target's (not a test's that compiles a product file too).
        if not os.path.relpath(f, build_dir).startswith(product):
            continue
        included = [os.path.relpath(line.split('"')[1], root)
                    for line in open(f) if line.startswith("#include \"")]
        mine = [i for i in included if i.endswith(".cpp") and i.startswith(product)]
        if not mine:
            continue
        covered.update(mine)
    elif not (f.endswith(".cpp") and f.startswith(product)):
        continue
    else:
        covered.add(f)
    if f not in entries:
        args = shlex.split(e["command"])
        obj = args[args.index("-o") + 1] if "-o" in args else None
        entries[f] = (e["command"], obj)

# What each object was compiled from, as ninja recorded it.
deps, current = {}, None
out = subprocess.run(["ninja", "-C", build_dir, "-t", "deps"], capture_output=True, text=True)
for line in out.stdout.splitlines():
    if line and not line.startswith(" "):
        current = line.split(":", 1)[0]
        deps[current] = []
    elif current and line.strip():
        deps[current].append(line.strip())

def digest(path, memo={}):
    if path not in memo:
        h = hashlib.sha256()
        try:
            with open(path, "rb") as fh:
                h.update(fh.read())
        except OSError:
            h.update(b"missing")
        memo[path] = h.hexdigest()
    return memo[path]

version = subprocess.run(["clang-tidy", "--version"], capture_output=True, text=True).stdout
common = hashlib.sha256((version + open(".clang-tidy").read()).encode()).hexdigest()

def key(f):
    command, obj = entries[f]
    listed = deps.get(obj) if obj else None
    if not listed:
        return None  # not built yet: no dependency list, always linted
    # The checkout's own path left out, so that a clone elsewhere finds what this one linted.
    h = hashlib.sha256((common + command.replace(root, "<root>")).encode())
    for d in listed:
        h.update(d.encode())
        h.update(digest(os.path.join(build_dir, d)).encode())
    return h.hexdigest()

files = sorted(entries)
keys = {f: key(f) for f in files}
todo = [f for f in files
        if not (use_cache and keys[f] and os.path.exists(os.path.join(cache, keys[f])))]

def lint(f):
    # The commands are GCC's: a warning option clang does not know is no finding. A unity
    # source includes .cpp files, which is what it is for.
    unity = ["--checks=-bugprone-suspicious-include"] if "/Unity/unity_" in f else []
    r = subprocess.run(["clang-tidy", "-p", build_dir, "--quiet",
                        "--extra-arg=-Wno-unknown-warning-option", *unity, f],
                       capture_output=True, text=True)
    if r.returncode == 0 and keys[f]:
        open(os.path.join(cache, keys[f]), "w").close()
    return f, r.returncode, r.stdout + r.stderr

findings = set()
failed = []
jobs = int(os.environ.get("RDMAVIDEO_LINT_JOBS") or os.cpu_count() or 2)
with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
    for f, rc, text in pool.map(lint, todo):
        if rc != 0:
            failed.append(f)
            found = [l for l in text.splitlines() if ": warning:" in l or ": error:" in l]
            findings.update(found or text.splitlines()[-5:])
if failed:
    for line in sorted(findings):
        print(line.replace(root + "/", ""), file=sys.stderr)
    print(f"lint: findings in {len(failed)} of {len(files)} sources (.clang-tidy lists the "
          "checks)", file=sys.stderr)
    sys.exit(1)
print(f"lint: {len(covered)} files in {len(files)} sources, no findings ({len(todo)} linted, "
      f"{len(files) - len(todo)} unchanged since they passed)")
PY
