"""Shared pieces of the benchmarks: timing, one table row per figure, the report."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Row:
    """One figure: what was measured, against what, and whether its target was met (None: not measured)."""

    figure: str
    baseline: str
    value: float | None
    unit: str
    target: str
    met: bool | None
    note: str = ""
    extra: dict[str, float | str] = field(default_factory=dict)

    def as_json(self) -> dict[str, object]:
        return asdict(self)


def median_time(fn: Callable[[], object], repeat: int) -> float:
    """Median wall time of ``repeat`` calls, in seconds."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def paired_medians(ours: Callable[[], object], base: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Medians of ``ours`` and ``base``, interleaved run by run so that drift hits both alike."""
    a, b = [], []
    for _ in range(repeat):
        started = time.perf_counter()
        ours()
        a.append(time.perf_counter() - started)
        started = time.perf_counter()
        base()
        b.append(time.perf_counter() - started)
    return statistics.median(a), statistics.median(b)


def run_process(argv: Sequence[str], **kwargs: object) -> Callable[[], None]:
    """A callable that runs ``argv`` to completion (output discarded) and fails loudly on a non-zero exit."""

    def call() -> None:
        proc = subprocess.run(list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False,
                              **kwargs)  # type: ignore[call-overload]
        if proc.returncode != 0:
            raise RuntimeError(f"{argv[0]} exited {proc.returncode}: {proc.stderr[-400:]!r}")

    return call


def script(name: str) -> str:
    """A console script of this environment (the venv's ``bin/``)."""
    return str(Path(sys.executable).parent / name)
