"""Fixtures for the audit report's tests: several signed runs, the audit over them, a headless Chromium."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from support.audit_runs import HOSTILE, AuditRuns, make_audit_runs
from support.chromium import find_chromium
from support.cli import CliRun, qualify  # noqa: F401 - the in-process `qualify` fixture


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's chromium, installed where this process may; a skip that names what is missing otherwise."""
    binary, why = find_chromium()
    if binary is None:
        pytest.skip(f"headless Chromium unavailable: {why}")
    return binary


@pytest.fixture
def runs(tmp_path: Path) -> AuditRuns:
    return make_audit_runs(tmp_path, hostile=HOSTILE)


@pytest.fixture
def audit(runs: AuditRuns, qualify: Callable[[list[str]], CliRun],  # noqa: F811
          tmp_path: Path) -> Callable[..., CliRun]:
    """`qualify audit` over the runs, the folders given in text order (run1, run10, run2)."""

    def run(*outputs: str) -> CliRun:
        folders = sorted(str(f) for f in runs.folders)
        return qualify(["audit", "--policy", str(runs.policy), "--evidence", *folders, *outputs])

    return run
