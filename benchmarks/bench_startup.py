"""Whole-process start-up: `qualify --help`, one local `qualify verify`, and the bundle's worker start."""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time

from _common import ROOT, Row, median_time, run_process, script

REPEAT = 10
SKILLHOST = ROOT / "qualification-out" / "work" / "linux" / "install" / "skillhost" / "skillhost"


def bench_help() -> Row:
    """`qualify --help` as a whole process, against a bare `python3 -c pass`."""
    help_call = run_process([script("qualify"), "--help"])
    bare = run_process([sys.executable, "-c", "pass"])
    help_call()
    bare()  # warm-up: the first start pays for cold caches
    ours, base = median_time(help_call, REPEAT), median_time(bare, REPEAT)
    ratio = ours / base
    return Row("`qualify --help` (whole process)", "`python3 -c pass`", ratio, "x", "<= 4.00x", ratio <= 4,
               f"median of {REPEAT}: {ours * 1e3:.0f} ms vs {base * 1e3:.0f} ms", {"ours_s": ours, "bare_s": base})


def verify_row(per_process: float) -> Row:
    """The row of one local `qualify verify` process, from a time measured by the audit figure."""
    return Row("local `qualify verify`, one platform (whole process)", "absolute", per_process, "s", "<= 0.50 s",
               per_process <= 0.5, "median of the 20 processes of the audit figure", {"seconds": per_process})


def _worker_once(cwd: str) -> float:
    started = time.perf_counter()
    proc = subprocess.Popen([str(SKILLHOST), "worker", "--self-test"], env={"PATH": "/usr/bin:/bin"}, cwd=cwd,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    out, _ = proc.communicate(timeout=30)
    elapsed = time.perf_counter() - started  # communicate() returns once the worker is reaped
    if proc.returncode != 0 or b"skillhost-worker-self-test" not in out:
        raise RuntimeError(f"worker self-test exited {proc.returncode}: {out[:200]!r}")
    return elapsed


def bench_worker() -> Row:
    """The frozen bundle's worker start, spawn to reaped; not measured without the bundle."""
    name = "worker start, frozen bundle (`skillhost worker --self-test`)"
    if not SKILLHOST.is_file():
        return Row(name, "absolute", None, "ms", "<= 150 ms", None,
                   "needs the frozen bundle; not measured here (run `nox -s qualify` first)")
    with tempfile.TemporaryDirectory(prefix="bench-worker-") as cwd:
        _worker_once(cwd)  # warm-up
        median = statistics.median(_worker_once(cwd) for _ in range(REPEAT))
    return Row(name, "absolute", median * 1e3, "ms", "<= 150 ms", median <= 0.150,
               f"median of {REPEAT}, spawn to reaped, minimal env, fresh cwd; {SKILLHOST.relative_to(ROOT)}",
               {"seconds": median})
