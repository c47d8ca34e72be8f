"""What confining an app stage costs: one stage command started through bubblewrap vs started bare.

Each sample runs the same short command (the producer's Python running ``pass``: what every probe, journey,
state verb and tool version command pays at least once) through the producer's ``StageRunner``, once with
the Linux adapter and once unconfined, interleaved run by run; the figure is the difference of the medians,
the time confinement adds to each stage (target: under 100 ms, against stages of seconds). Runnable alone:
``python benchmarks/bench_confinement.py``.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from _common import Row
from desktop_qualify.producer.confinement import StageRunner, Unconfined, platform_confinement, producer_python

REPEAT = 21
TARGET_MS = 100.0


def _sample(runner: StageRunner, root: Path) -> float:
    home = root / "home"
    sandbox = runner.sandbox("probe", home=home, tmp=home, writable=[home], toolchain=runner.toolchain(), cwd=home)
    started = time.perf_counter()
    result = runner.run([producer_python(), "-c", "pass"], sandbox, timeout=60, env={"PATH": "/usr/bin:/bin",
                                                                                   "HOME": str(home)})
    elapsed = time.perf_counter() - started
    if result.exit_code != 0:
        raise RuntimeError(f"the stage command exited {result.exit_code}: {result.stderr[-300:]!r}")
    return elapsed


def bench() -> list[Row]:
    """The added start-up of one confined stage command, in milliseconds (median of paired runs)."""
    adapter = platform_confinement("linux")
    why = adapter.unavailable()
    if why is not None:
        return [Row("confinement per stage", "the same command unconfined", None, "ms", f"<= {TARGET_MS:.0f} ms",
                    None, f"not measured: {why}")]
    confined, bare = StageRunner(adapter, ()), StageRunner(Unconfined("baseline"), ())
    with tempfile.TemporaryDirectory(prefix="bench-confinement-") as scratch:
        root = Path(scratch)
        (root / "home").mkdir()
        ours, base = [], []
        for _ in range(REPEAT):
            ours.append(_sample(confined, root))
            base.append(_sample(bare, root))
    added = (statistics.median(ours) - statistics.median(base)) * 1000
    return [Row("confinement per stage (bubblewrap)", "the same command unconfined", round(added, 1), "ms",
                f"<= {TARGET_MS:.0f} ms", added <= TARGET_MS,
                f"median of {REPEAT} paired runs: {statistics.median(ours) * 1000:.1f} ms confined, "
                f"{statistics.median(base) * 1000:.1f} ms bare; a run has about 5 such stages",
                {"confined_ms": round(statistics.median(ours) * 1000, 1),
                 "bare_ms": round(statistics.median(base) * 1000, 1)})]


if __name__ == "__main__":
    for row in bench():
        print(row)
