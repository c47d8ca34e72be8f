"""The benchmarks read the producer's stage lines, with or without the timestamp a log (not a terminal) adds.

The rerun and journey figures time stages from these lines: a format change the parser misses would make a
benchmark report an error, or worse a wrong span, long after the change.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
CHILD = ("desktop_qualify.producer.processes._process: child /usr/bin/bwrap --unshare-user: {d} s, exit 0 "
         "(started at t={t} s)")


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_producer_log", BENCHMARKS / "_producer_log.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _log(prefix: str) -> str:
    return "\n".join([
        f"{prefix}[produce linux] build         ...",
        CHILD.format(d="11.798", t="365.312"),
        CHILD.format(d="0.183", t="376.807"),
        CHILD.format(d="10.000", t="366.000"),
        f"{prefix}[produce linux] build         app.tar.gz 13491109 bytes second build reproduced  (12.9s)",
        f"{prefix}[produce linux] journey       ...",
        CHILD.format(d="2.590", t="377.885"),
        f"{prefix}[produce linux] journey       64/64 steps passed, missing=0 passed=True  (2.7s)",
    ])


@pytest.mark.parametrize("prefix", ["", "2026-12-04T18:42:33Z "], ids=["terminal", "log"])
def test_stage_lines_read_with_and_without_timestamps(prefix: str) -> None:
    log = _module()
    text = _log(prefix)
    assert log.stage_seconds(text, "journey") == 2.7
    assert log.stage_seconds(text, "build") == 12.9
    assert log.journey_steps(text) == 64
    # the build's three children: two side by side count once (365.312 .. 377.110), then 376.807 .. 376.990 inside
    assert log.union_seconds(log.child_spans(text, "build")) == pytest.approx(377.110 - 365.312)
    assert log.child_spans(text, "journey") == [(377.885, pytest.approx(380.475))]


def test_a_stage_that_never_ended_is_an_error() -> None:
    log = _module()
    with pytest.raises(RuntimeError, match="no end of its journey stage"):
        log.stage_seconds("[produce linux] journey       ...\n", "journey")
    with pytest.raises(RuntimeError, match="no journey step count"):
        log.journey_steps("[produce linux] build  (1.0s)\n")
