"""Fuzz mode (``nox -s fuzz``): start the wall clock, share it out, report what each target ran."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from .runner import BUDGET, REPORT_ENV, STATS, fuzz_seconds


def _is_fuzz_test(item: pytest.Item) -> bool:
    return bool(getattr(getattr(item, "function", None), "fuzz_target", False))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    seconds = fuzz_seconds()
    if seconds is not None:
        BUDGET.deadline = time.monotonic() + seconds
        BUDGET.remaining_tests = sum(1 for item in items if _is_fuzz_test(item))


def pytest_runtest_teardown(item: pytest.Item) -> None:
    # Counted here rather than in the runner, so that a skipped test gives its share to the others.
    if _is_fuzz_test(item) and BUDGET.remaining_tests:
        BUDGET.remaining_tests -= 1


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if fuzz_seconds() is None or not STATS:
        return
    terminalreporter.section("fuzz run")
    terminalreporter.write_line(f"{'target':<16} {'executions':>10} {'batches':>7} {'seconds':>8} {'known':>6} new")
    for stats in STATS.values():
        terminalreporter.write_line(f"{stats.name:<16} {stats.executions:>10} {stats.batches:>7} "
                                    f"{stats.seconds:>8.1f} {stats.known_hits:>6} {len(stats.new_cases)}")
    report = os.environ.get(REPORT_ENV)
    if report:
        Path(report).write_text(json.dumps([{
            "target": s.name, "executions": s.executions, "batches": s.batches, "seconds": round(s.seconds, 1),
            "known_hits": s.known_hits, "new_cases": [str(p) for p in s.new_cases]} for s in STATS.values()],
            indent=2) + "\n", encoding="utf-8")
