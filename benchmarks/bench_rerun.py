"""The main job's loop: a rerun of `nox -s qualify` against its first run, and the producer's own time.

In a scratch clone of this repository's HEAD (on a branch named `main`, which
the local source gate requires), with a nox environment folder of its own:

- the first run: `nox -s qualify` with no environment yet (it creates one and
  installs the project), with an empty pip cache, as on a machine that never
  installed these packages;
- the same first run again in a second environment folder, pip's cache now
  warm: what a second clone on this machine pays;
- the rerun: the same command again, same commit (the first environment
  reused, no install, since the dependencies did not change); target: at most
  half the first run, also held against the warm first run;
- the producer's own work: `qualify produce` in that environment, whole
  process, minus the time the app's build command was running (the children
  the build stage runs, as the producer logs them at INFO: the two builds of a
  reproducibility check run side by side, so it is the union of their spans,
  not their sum), the median of three; target: at most 5 s.

Wall-clock times of whole processes, as a user sees them. pip installs from
the machine's configured index either way; only the committed HEAD is
measured, never the work tree's edits.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, Row
from _producer_log import child_spans, union_seconds

RERUNS = 3
PRODUCES = 3


def host_platform() -> str:
    """The platform name the producer takes for this machine."""
    if sys.platform.startswith("linux"):
        return "linux"
    return {"darwin": "macos", "win32": "windows"}.get(sys.platform, sys.platform)


def _children_cpu() -> float:
    """CPU seconds of every waited-for descendant so far; steadier than wall time on a shared machine (POSIX)."""
    if sys.platform == "win32":
        return float("nan")
    import resource  # noqa: PLC0415 - POSIX only

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds of the whole process tree, and the combined output of one command."""
    cpu, started = _children_cpu(), time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          check=False, timeout=1800)
    elapsed, cpu = time.perf_counter() - started, _children_cpu() - cpu
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:4])} exited {done.returncode}: {done.stdout[-1500:]}")
    return elapsed, cpu, done.stdout


def build_command_seconds(output: str) -> float:
    """How long the build stage's children (the app's build command) were running: the union of their spans."""
    spans = child_spans(output, "build")
    if not spans:
        raise RuntimeError("the producer logged no child process in its build stage (QUALIFY_LOGLEVEL=INFO)")
    return union_seconds(spans)


def clone(into: Path, commit: str = "HEAD", name: str = "checkout") -> Path:
    """A scratch clone of this repository at ``commit``, on a branch named main (the local source gate's)."""
    resolved = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", f"{commit}^{{commit}}"],
                              capture_output=True, text=True, check=True).stdout.strip()
    checkout = into / name
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(checkout)], check=True)
    subprocess.run(["git", "-C", str(checkout), "checkout", "-q", "-B", "main", resolved], check=True)
    return checkout


def bench() -> list[Row]:
    """This module's figures, each a row of the bench table."""
    names = ("rerun of `nox -s qualify`, same commit (environment reused)",
             "the same rerun, against a first run with pip's cache warm",
             "producer's own work: `qualify produce` minus the app's build command")
    if shutil.which("git") is None:
        return [Row(name, "-", None, "", "-", None, "needs git: not measured here") for name in names]
    work = Path(tempfile.mkdtemp(prefix="bench-rerun-"))
    try:
        checkout = clone(work)
        env = {**os.environ, "QUALIFY_LOGLEVEL": "INFO"}

        def nox(envdir: str, **extra: str) -> tuple[float, float]:
            argv = [sys.executable, "-m", "nox", "--envdir", str(work / envdir), "-s", "qualify"]
            return timed(argv, checkout, {**env, **extra})[:2]

        (first, first_cpu), (warm, warm_cpu) = nox("nox", PIP_CACHE_DIR=str(work / "pip-cache")), nox("nox-warm")
        reruns = [nox("nox") for _ in range(RERUNS)]
        rerun, rerun_cpu = statistics.median(r[0] for r in reruns), statistics.median(r[1] for r in reruns)
        qualify = work / "nox" / "qualify" / ("Scripts" if sys.platform == "win32" else "bin") / "qualify"
        runs = []
        for index in range(PRODUCES):
            produce, _, output = timed([str(qualify), "produce", "--policy", "policies/local.toml", "--platform",
                                         host_platform(), "--out", str(work / f"produce-{index}")], checkout, env)
            build = build_command_seconds(output)
            runs.append((produce - build, produce, build))
        own, produce, build = sorted(runs)[len(runs) // 2]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return [
        Row(names[0], "its first run (new environment, empty pip cache)", rerun / first, "x", "<= 0.50x",
            rerun <= first / 2, f"wall: first {first:.1f} s, rerun {rerun:.1f} s (median of {RERUNS}); CPU: first "
            f"{first_cpu:.1f} s, rerun {rerun_cpu:.1f} s ({rerun_cpu / first_cpu:.2f}x)",
            {"first_s": first, "rerun_s": rerun, "first_cpu_s": first_cpu, "rerun_cpu_s": rerun_cpu}),
        Row(names[1], "a first run in a new environment, pip's cache warm", rerun / warm, "x", "<= 0.50x",
            rerun <= warm / 2, f"wall: warm first run {warm:.1f} s; CPU: {warm_cpu:.1f} s "
            f"({rerun_cpu / warm_cpu:.2f}x)", {"warm_first_s": warm, "warm_first_cpu_s": warm_cpu}),
        Row(names[2], "absolute", own, "s", "<= 5 s", own <= 5.0,
            f"the run of median own time of {PRODUCES}: `qualify produce` {produce:.1f} s, of which the build "
            f"command {build:.1f} s",
            {"produce_s": produce, "build_command_s": build}),
    ]
