"""Running a target: a small derandomized run by default, wall-clock batches under ``nox -s fuzz``.

Hypothesis has no time budget of its own, so the fuzz mode runs a target in
batches of ``max_examples`` with a fresh seed each, sized from the rate of the
batch before, until the target's share of the budget is spent. A batch that
fails has already been shrunk by Hypothesis; its minimal input is saved as a
corpus case and fuzzing goes on, now treating that failure as known.
"""

from __future__ import annotations

import os
import random
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, Phase, event, example, given, seed, settings
from hypothesis.errors import HypothesisException

from .corpus import known_bug_signatures, save_case
from .oracle import PropertyViolationError
from .target import Target

F = TypeVar("F", bound=Callable[..., Any])

FUZZ_SECONDS_ENV = "QUALIFY_FUZZ_SECONDS"  # set by `nox -s fuzz`; absent in the default run
REPORT_ENV = "QUALIFY_FUZZ_REPORT"  # optional: where the fuzz run writes its per-target figures (JSON)
REPO = Path(__file__).resolve().parents[2]

# The default run: a few dozen examples a target, the same ones every run (a CI
# failure reproduces locally), no example database written into the work tree.
settings.register_profile(
    "qualify", deadline=None, derandomize=True, database=None, print_blob=False,
    # Building signed evidence takes tens of milliseconds; that is the test, not a slow strategy.
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.register_profile(
    "fuzz", deadline=None, derandomize=False, database=None, print_blob=False, report_multiple_bugs=False,
    suppress_health_check=list(HealthCheck),
    # No explain phase: the saved case and its traceback are the report.
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
)

_MIN_BATCH, _MAX_BATCH, _BATCH_SECONDS = 10, 5000, 20.0


@dataclass
class Budget:
    """The fuzz run's wall clock, shared out over the property tests still to run."""

    deadline: float | None = None
    remaining_tests: int = 0

    def share(self) -> float:
        if self.deadline is None:
            return 0.0
        return max(0.0, (self.deadline - time.monotonic()) / max(1, self.remaining_tests))


@dataclass
class TargetStats:
    name: str
    executions: int = 0  # calls of the check, shrinking included
    batches: int = 0
    seconds: float = 0.0
    known_hits: int = 0
    new_cases: list[Path] = field(default_factory=list)


BUDGET = Budget()
STATS: dict[str, TargetStats] = {}


def fuzz_seconds() -> float | None:
    raw = os.environ.get(FUZZ_SECONDS_ENV)
    return float(raw) if raw else None


def fuzzes(test: F) -> F:
    """Mark a test as one that spends a share of the fuzz budget (the conftest counts them)."""
    test.fuzz_target = True  # type: ignore[attr-defined]
    return test


def _is_project_file(filename: str) -> bool:
    path = Path(filename)
    return (path.is_relative_to(REPO) and not path.is_relative_to(REPO / "tests")
            and ".nox" not in path.parts and "site-packages" not in path.parts)


def signature_of(exc: BaseException) -> str:
    """What failed, stable across inputs and line edits: the violated property, or the raising function."""
    if isinstance(exc, PropertyViolationError):
        return f"violation:{exc.kind}"
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return type(exc).__name__
    frame = ([frame for frame in frames if _is_project_file(frame.filename)] or frames)[-1]
    where = Path(frame.filename).relative_to(REPO) if _is_project_file(frame.filename) else Path(frame.filename).name
    return f"{type(exc).__name__}@{where}:{frame.name}"


def check_property(target: Target) -> None:
    stats = STATS.setdefault(target.name, TargetStats(target.name))
    known = set(known_bug_signatures())
    strategy = target.strategy()
    last: list[Any] = []  # the latest failing call: Hypothesis replays the minimal example last
    stop_after = [float("inf")]  # the end of this target's slice of a fuzz run

    def body(value: Any) -> None:
        # Past the slice, the rest of a batch passes without running: a batch cannot be stopped from
        # inside, and an overlong one would eat the next target's share. Never while a failure is
        # being shrunk (``last`` is set), or the shrinker would see it pass and report a flaky test.
        if not last and time.monotonic() > stop_after[0]:
            return
        stats.executions += 1
        try:
            target.check(value)
        except HypothesisException:
            raise
        except Exception as exc:
            signature = signature_of(exc)
            if signature in known:
                # Reported and replayed as a strict xfail in tests/corpus_fuzz; do not let it hide others.
                stats.known_hits += 1
                event(f"known bug: {signature}")
                return
            last[:] = [value, exc, signature]
            raise

    def build(profile: str, **overrides: Any) -> Callable[[], None]:
        test = given(strategy)(body)
        for value in target.examples:
            test = example(value)(test)
        return settings(settings.get_profile(profile), **overrides)(test)

    started = time.monotonic()
    budget = fuzz_seconds()
    try:
        if budget is None:
            build("qualify", max_examples=target.default_examples)()
        else:
            stop_after[0] = time.monotonic() + BUDGET.share()
            _fuzz(target, stats, build, last=last, known=known, end=stop_after[0])
    finally:
        stats.seconds += time.monotonic() - started
    if stats.new_cases:
        names = ", ".join(str(path.relative_to(REPO)) for path in stats.new_cases)
        pytest.fail(f"{target.name}: {len(stats.new_cases)} new failing input(s) saved: {names}", pytrace=False)


def _fuzz(target: Target, stats: TargetStats, build: Callable[..., Callable[[], None]], *, last: list[Any],
          known: set[str], end: float) -> None:
    batch = _MIN_BATCH
    while time.monotonic() < end:
        before, started = stats.executions, time.monotonic()
        batch_seed = random.getrandbits(64)
        try:
            seed(batch_seed)(build("fuzz", max_examples=batch))()
        except Exception:
            if not last:
                raise  # Hypothesis itself failed (e.g. an unsatisfiable strategy): a bug in these tests
            value, exc, signature = last
            last.clear()
            known.add(signature)
            message = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
            stats.new_cases.append(save_case(
                target.name, target.encode(value), signature=signature,
                note=f"found by nox -s fuzz (seed {batch_seed}): {message}",
                traceback="".join(traceback.format_exception(exc))))
        stats.batches += 1
        elapsed = max(1e-3, time.monotonic() - started)
        rate = (stats.executions - before) / elapsed
        # At most half of what is left: the rate of small early examples overestimates later ones.
        left = end - time.monotonic()
        batch = max(_MIN_BATCH, min(_MAX_BATCH, int(rate * min(_BATCH_SECONDS, left / 2))))
