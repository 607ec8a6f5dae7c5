# SPDX-License-Identifier: Apache-2.0
"""What the benchmark runners in bench/ share: child processes timed and reaped by os.wait4,
waits for ports and for an idle machine, CPU-time reading, the per-case Result with the
table and verdict printing built on it, and small statistics. Each runner keeps only its
cases and its report; see bench/README.md.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

BUSY_CORES = 0.3  # other processes using this many cores or more during a case: "busy"


class CaseError(Exception):
    """A case that could not run (a tool missing, a process failing or timing out)."""


# ---------------------------------------------------------------------------------------------
# Processes


class Proc:
    """A child process whose exit time and rusage are taken by os.wait4 in a waiter thread,
    so the exit time is exact without polling. stdout/stderr go to files in the work dir;
    stdin is /dev/null or the file `stdin`, and `nice` lowers its priority."""

    def __init__(self, name: str, argv: list[str], workdir: Path, stdin: Path | None = None,
                 nice: int = 0):
        self.name = name
        self.argv = argv
        self.out_path = workdir / f"{name}.out"
        self.err_path = workdir / f"{name}.err"
        self.rusage = None
        self.exit_code: int | None = None
        self.end: float | None = None
        self._lock = threading.Lock()
        with ExitStack() as files:
            out = files.enter_context(open(self.out_path, "wb"))
            err = files.enter_context(open(self.err_path, "wb"))
            inp = files.enter_context(open(stdin, "rb")) if stdin else subprocess.DEVNULL
            self.start = time.monotonic()
            try:
                self._popen = subprocess.Popen(
                    argv, stdin=inp, stdout=out, stderr=err, close_fds=True,
                    preexec_fn=(lambda: os.nice(nice)) if nice else None)
            except OSError as e:
                raise CaseError(f"{name}: cannot start {argv[0]}: {e}") from e
        self.pid = self._popen.pid
        self._thread = threading.Thread(target=self._reap, daemon=True)
        self._thread.start()

    def _reap(self) -> None:
        """The waiter thread: blocks in os.wait4 until the child exits."""
        _, status, rusage = os.wait4(self.pid, 0)
        end = time.monotonic()
        with self._lock:
            self.end = end
            self.rusage = rusage
            self.exit_code = os.waitstatus_to_exitcode(status)
            self._popen.returncode = self.exit_code  # reaped here; Popen must not wait again

    @property
    def done(self) -> bool:
        """Whether the process has exited (and been reaped)."""
        with self._lock:
            return self.exit_code is not None

    def join(self, timeout: float) -> bool:
        """Waits up to `timeout` seconds for the process to exit; True when it has."""
        self._thread.join(max(0.0, timeout))
        return not self._thread.is_alive()

    def wait(self, deadline: float) -> None:
        """Waits until the deadline (time.monotonic()); stops the process past it."""
        if not self.join(deadline - time.monotonic()):
            self.stop()
            raise CaseError(f"{self.name}: still running after its time limit; killed")

    def send_signal(self, sig: int) -> bool:
        """Sends `sig` to this child (by its own id) unless it has exited; True when sent."""
        with self._lock:
            if self.exit_code is not None:
                return False
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                return False
        return True

    def stop(self, sig: int = signal.SIGTERM, grace: float = 2.0) -> bool:
        """Sends `sig`, gives the process `grace` seconds to exit, then SIGKILL. True when it
        exited by itself or within the grace, False when it had to be killed."""
        self.send_signal(sig)
        if self.join(grace):
            return True
        self.send_signal(signal.SIGKILL)
        self.join(5.0)
        return False

    @property
    def cpu_seconds(self) -> float:
        """User + system CPU seconds of the whole process, once reaped."""
        if self.rusage is None:
            return 0.0
        return self.rusage.ru_utime + self.rusage.ru_stime

    @property
    def maxrss_kb(self) -> int:
        """Peak resident memory in KiB, once reaped."""
        return self.rusage.ru_maxrss if self.rusage is not None else 0

    def stdout(self) -> str:
        """What the process has written to stdout so far."""
        return self.out_path.read_text(errors="replace")

    def stderr(self) -> str:
        """What the process has written to stderr so far."""
        return self.err_path.read_text(errors="replace")

    def check(self) -> None:
        """Raises CaseError, with the end of its stderr, when the process did not exit 0."""
        if self.exit_code != 0:
            tail = " | ".join(self.stderr().strip().splitlines()[-4:])
            raise CaseError(f"{self.name} exited with {self.exit_code}: {tail}")


def stop_all(procs: list[Proc], sig: int = signal.SIGTERM, grace: float = 2.0) -> None:
    """Sends `sig` to every process still running, gives them `grace` seconds in all to exit,
    then SIGKILLs the rest."""
    for p in procs:
        p.send_signal(sig)
    deadline = time.monotonic() + grace
    left = [p for p in procs if not p.join(deadline - time.monotonic())]
    for p in left:
        p.send_signal(signal.SIGKILL)
    for p in left:
        p.join(5.0)


def wait_all(procs: list[Proc], seconds: float) -> None:
    """Reaps every process within `seconds`, in turn; raises CaseError for the first that
    failed (the caller stops the rest)."""
    deadline = time.monotonic() + seconds
    for p in procs:
        p.wait(deadline)
        p.check()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _exited_early(proc: Proc) -> CaseError:
    """The error for a process that exited while a line or a port was awaited from it."""
    return CaseError(f"{proc.name} exited ({proc.exit_code}) before listening: "
                     + " | ".join(proc.stderr().strip().splitlines()[-3:]))


def wait_listening(port: int, proc: Proc, timeout: float = 10.0) -> None:
    """Waits until 127.0.0.1:port is in LISTEN state (from /proc/net/tcp: probing with a
    connect would use up the one connection FFmpeg and GStreamer accept)."""
    want = f"0100007F:{port:04X}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open("/proc/net/tcp") as f:
            for line in f:
                parts = line.split()
                if len(parts) > 3 and parts[1] == want and parts[3] == "0A":
                    return
        if proc.done:
            raise _exited_early(proc)
        time.sleep(0.005)
    raise CaseError(f"{proc.name}: not listening on 127.0.0.1:{port} after {timeout:.0f} s")


def wait_for_line(proc: Proc, pattern: str, timeout: float = 10.0,
                  what: str | None = None) -> re.Match:
    """Waits for `pattern` (a regular expression) on the process's stderr; its match. `what`
    names the line in the error (the pattern itself by default)."""
    compiled = re.compile(pattern)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = compiled.search(proc.stderr())
        if m:
            return m
        if proc.done:
            raise _exited_early(proc)
        time.sleep(0.005)
    raise CaseError(f"{proc.name}: no {what or repr(pattern)} line after {timeout:.0f} s")


def wait_for_port_line(proc: Proc, timeout: float = 10.0, host: str = "127.0.0.1") -> int:
    """Waits for "listening on HOST:PORT" on the process's stderr; the port."""
    m = wait_for_line(proc, rf"listening on {re.escape(host)}:(\d+)", timeout, "'listening on'")
    return int(m.group(1))


def fakesink_frames(proc: Proc) -> tuple[int, bool]:
    """Frames a gst-launch-1.0 -v ... ! fakesink silent=false rendered (one last-message line
    each on its stdout) and whether EOS came."""
    text = proc.stdout()
    return (len(re.findall(r"fakesink0: last-message = chain", text)),
            "Got EOS from element" in text)


# ---------------------------------------------------------------------------------------------
# CPU


def proc_cpu_seconds(pid: int) -> float:
    """CPU seconds (user and system, every thread) of a running process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CpuWatch:
    """Whole-machine busy CPU time over a case (from /proc/stat), to tell when something
    else was running: busy time not accounted for by our children belongs to others."""

    def __init__(self):
        self.tick = os.sysconf("SC_CLK_TCK")
        self.begin = self._busy()
        self.t0 = time.monotonic()

    def _busy(self) -> float:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        # user nice system idle iowait irq softirq steal ...
        busy = fields[0] + fields[1] + fields[2] + fields[5] + fields[6] + fields[7]
        return busy / self.tick

    def foreign_cores(self, our_cpu: float) -> float:
        """Average cores busy since the start, less `our_cpu` seconds of our own."""
        wall = time.monotonic() - self.t0
        other = self._busy() - self.begin - our_cpu
        return max(0.0, other / wall) if wall > 0 else 0.0


def busy_cores(sample: float = 0.5) -> float:
    """Average cores busy over `sample` seconds, whoever is using them."""
    watch = CpuWatch()
    time.sleep(sample)
    return watch.foreign_cores(0.0)


def wait_idle(limit: float) -> float:
    """Waits up to `limit` seconds for the machine to go idle (under 0.2 cores busy);
    returns the last busy reading."""
    deadline = time.monotonic() + limit
    busy = busy_cores()
    while busy >= 0.2 and time.monotonic() < deadline:
        busy = busy_cores()
    return busy


# ---------------------------------------------------------------------------------------------
# Results


@dataclass
class Result:
    """One run of one case: what moved, in what time, at what CPU cost, or why it failed."""

    case: str
    format: str
    kind: str                  # "throughput", "realtime" or a runner's own
    ok: bool = False
    error: str = ""
    frames: int = 0            # frames the receiver got
    frames_sent: int = 0       # frames the sender produced (or was asked for)
    bytes: int = 0
    seconds: float = 0.0       # the time throughput is computed from (see timing)
    timing: str = ""
    wall_seconds: float = 0.0  # first process start to last process exit
    cpu_seconds: float = 0.0   # both ends, whole process (os.wait4)
    cpu_by_process: dict = field(default_factory=dict)
    dropped: int = 0
    foreign_cores: float = 0.0  # average cores busy with other processes during the case
    notes: list = field(default_factory=list)
    extra: dict = field(default_factory=dict)

    @property
    def fps(self) -> float:
        return self.frames / self.seconds if self.seconds > 0 else 0.0

    @property
    def gbps(self) -> float:
        return self.bytes / self.seconds / 1e9 if self.seconds > 0 else 0.0

    @property
    def cpu_per_gb(self) -> float:
        return self.cpu_seconds / (self.bytes / 1e9) if self.bytes else 0.0

    def to_json(self) -> dict:
        """Every field and the derived figures, for --json."""
        d = asdict(self)
        d.update(fps=self.fps, gbytes_per_s=self.gbps, cpu_seconds_per_gb=self.cpu_per_gb)
        return d


def run_case(result: Result, body, procs: list[Proc]) -> Result:
    """Runs body(); any failure is recorded on the result; processes are always reaped."""
    watch = CpuWatch()
    t0 = time.monotonic()
    try:
        body()
        result.ok = True
    except CaseError as e:
        result.error = str(e)
    except (OSError, ValueError, KeyError, json.JSONDecodeError) as e:
        result.error = f"{type(e).__name__}: {e}"
    finally:
        stop_all(procs)
    ends = [p.end for p in procs if p.end is not None]
    result.wall_seconds = (max(ends) if ends else time.monotonic()) - t0
    result.cpu_by_process = {p.name: round(p.cpu_seconds, 3) for p in procs}
    result.extra["commands"] = {p.name: p.argv for p in procs}
    if not result.cpu_seconds:
        result.cpu_seconds = sum(p.cpu_seconds for p in procs)
    result.foreign_cores = watch.foreign_cores(sum(p.cpu_seconds for p in procs))
    if result.foreign_cores >= BUSY_CORES:
        result.notes.append(f"busy: other processes used {result.foreign_cores:.1f} cores")
    return result


class CaseDirs:
    """Numbered folders for the cases' files under one work folder: 01-tag, 02-tag, ..."""

    def __init__(self, root: Path):
        self.root = root
        self.count = 0

    def new(self, tag: str) -> Path:
        """Makes the next folder, named after `tag`."""
        self.count += 1
        d = self.root / f"{self.count:02d}-{tag}"
        d.mkdir()
        return d


def combine(runs: list[Result],
            note: str = "median of {n} runs ({low:.2f}-{high:.2f} GB/s)") -> list[Result]:
    """One row per (case, format), in first-run order: the run with the median GB/s when a
    case ran more than once (every run is kept in its extra["runs"], and `note` is put first
    among its notes); a failed run makes the row failed."""
    groups: dict[tuple[str, str], list[Result]] = {}
    for r in runs:
        groups.setdefault((r.case, r.format), []).append(r)
    rows = []
    for group in groups.values():
        failed = [r for r in group if not r.ok]
        if failed or len(group) == 1:
            rows.append(failed[0] if failed else group[0])
            continue
        ordered = sorted(group, key=lambda r: r.gbps)
        row = ordered[(len(ordered) - 1) // 2]
        row.notes.insert(0, note.format(n=len(group), low=ordered[0].gbps,
                                        high=ordered[-1].gbps))
        row.extra["runs"] = [r.to_json() for r in group]
        rows.append(row)
    return rows


def text_table(head: list[str], rows: list[list[str]], right: set[int],
               rules_before: set[int] = frozenset()) -> str:
    """A plain-text table: every column but the last padded to its widest cell (the columns
    in `right` right-aligned), a rule under the head and before each row index in
    `rules_before`."""
    widths = [max([len(head[i])] + [len(row[i]) for row in rows]) for i in range(len(head) - 1)]

    def line(cells: list[str]) -> str:
        out = [c.rjust(widths[i]) if i in right else c.ljust(widths[i])
               for i, c in enumerate(cells[:-1])]
        return "  ".join(out + [cells[-1]]).rstrip()

    rule = "  ".join("-" * w for w in widths) + "  -----"
    lines = [line(head), rule]
    for i, row in enumerate(rows):
        if i in rules_before:
            lines.append(rule)
        lines.append(line(row))
    return "\n".join(lines)


def print_verdicts(heading: str, verdicts: list[dict]) -> None:
    """Prints `heading:` and one PASS / FAIL / N/A line per {"target", "pass", "detail"}."""
    print(f"{heading}:")
    for v in verdicts:
        verdict = {True: "PASS", False: "FAIL", None: "N/A "}[v["pass"]]
        print(f"  {verdict}  {v['target']}: {v['detail']}")


def warn_if_busy(runs: list[Result]) -> None:
    """Prints a warning when other processes were using the CPU during any run."""
    busy = [r for r in runs if r.foreign_cores >= BUSY_CORES]
    if busy:
        print(f"\nWarning: other processes were using the CPU during {len(busy)} run(s); "
              "those numbers are low. Rerun on an idle machine.")


def interrupt_on_sigterm() -> None:
    """Makes SIGTERM raise KeyboardInterrupt, so it unwinds through the runner's cleanup
    (children stopped, the work folder removed) as Ctrl-C does."""

    def on_term(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)


def drops_text(r: dict) -> str:
    """A live case's drops with their causes (`dropped`, `drops`: cause -> count), "8 (late 6,
    no credit 2)"; a plain socket's, which never drops, as "0 (N late)" from `late`."""
    if "late" in r:
        return f"0 ({r['late']} late)"
    causes = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in r["drops"].items() if v)
    return f"{r['dropped']} ({causes})" if causes else str(r["dropped"])


# ---------------------------------------------------------------------------------------------
# Statistics


def percentile(values: list[float], p: float) -> float:
    """The p-th percentile (0 to 100) of `values`, linearly interpolated; 0 when empty."""
    if not values:
        return 0.0
    s = sorted(values)
    k = (len(s) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)
