"""The reference app's journey: what its third round of skill-host steps added to the journey stage's time.

The baseline is the journey at a named commit before that round (``BASELINE``: the host-boundary step then
looked for leftovers and no allowed step checked what it got).
In a scratch clone of each commit (on a branch named main), with an environment of its own:
`nox -s qualify` once (it installs the project and checks the chain qualifies), then `qualify produce`
``PRODUCES`` times, the two commits interleaved so that the machine's drift hits both alike. The figure is the
median of the journey stage's time as the producer prints it (the confined journey command, its start and its
record's read-back), with the steps each journey ran beside it. Wall-clock time; the journey runs its phases two
at a time, so a busy machine stretches both alike.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from _common import Row
from _producer_log import journey_steps, stage_seconds
from bench_rerun import clone, host_platform, timed

#: the last commit before the skill host's third round (issue 34): its journey ran 63 steps
BASELINE = "e6916a5"
PRODUCES = 3
TARGET = 1.5


def _bin(envdir: Path, name: str) -> str:
    return str(envdir / "qualify" / ("Scripts" if sys.platform == "win32" else "bin") / name)


def _journeys(checkout: Path, envdir: Path, out: Path, env: dict[str, str]) -> tuple[float, int]:
    """One `qualify produce` in ``checkout``: the journey stage's seconds and its step count."""
    output = timed([_bin(envdir, "qualify"), "produce", "--policy", "policies/local.toml", "--platform",
                    host_platform(), "--out", str(out)], checkout, env)[2]
    shutil.rmtree(out, ignore_errors=True)
    return stage_seconds(output, "journey"), journey_steps(output)


def bench() -> list[Row]:
    """This module's row of the bench table."""
    name = "the reference app's journey stage, skill host round 3"
    if shutil.which("git") is None:
        return [Row(name, "-", None, "", "-", None, "needs git: not measured here")]
    work = Path(tempfile.mkdtemp(prefix="bench-journey-"))
    env = {**os.environ, "QUALIFY_LOGLEVEL": "INFO"}
    try:
        checkouts = {"head": clone(work, "HEAD", "head"), "baseline": clone(work, BASELINE, "baseline")}
        for label, checkout in checkouts.items():
            timed([sys.executable, "-m", "nox", "--envdir", str(work / f"nox-{label}"), "-s", "qualify"],
                  checkout, env)
        seconds: dict[str, list[float]] = {"head": [], "baseline": []}
        steps: dict[str, int] = {}
        for index in range(PRODUCES):
            for label, checkout in checkouts.items():
                took, steps[label] = _journeys(checkout, work / f"nox-{label}", work / f"out-{label}-{index}", env)
                seconds[label].append(took)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    head, base = statistics.median(seconds["head"]), statistics.median(seconds["baseline"])
    return [Row(name, f"the journey at {BASELINE} ({steps['baseline']} steps)", head / base, "x",
                f"<= {TARGET:.1f}x", head <= base * TARGET,
                f"{steps['head']} steps in {head:.1f} s vs {steps['baseline']} in {base:.1f} s (medians of "
                f"{PRODUCES}, interleaved): {head - base:+.1f} s",
                {"head_s": head, "baseline_s": base, "head_steps": steps["head"],
                 "baseline_steps": steps["baseline"]})]
