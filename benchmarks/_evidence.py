"""Local evidence for the verify benchmarks, from the test suite's factory (tests/ goes on sys.path)."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

from _common import ROOT

if str(ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests"))

from support.evidence_factory import Evidence, make_evidence


def default_steps() -> list[str]:
    """The journey steps of the default policy (policies/local.toml)."""
    with (ROOT / "policies" / "local.toml").open("rb") as handle:
        return list(tomllib.load(handle)["journey"]["steps"])


def evidence(tmp: Path, *, steps: list[str] | None = None, committed_layout: bool = False) -> Evidence:
    tmp.mkdir(parents=True, exist_ok=True)
    if steps:
        return make_evidence(tmp, required_steps=steps, committed_layout=committed_layout)
    return make_evidence(tmp, committed_layout=committed_layout)


__all__ = ["Evidence", "default_steps", "evidence"]
