"""Shared fixtures for the unit suite: drive `qualify` in-process and capture what it says."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cli import qualify  # noqa: F401 - the in-process `qualify` fixture

REPO = Path(__file__).resolve().parents[2]
VECTORS = REPO / ".." / "shared" / "vectors"


@pytest.fixture
def vectors() -> Path:
    """The shared test vectors, or a skip that says where they were looked for."""
    if not VECTORS.is_dir():
        pytest.skip(f"shared test vectors not present at {VECTORS.resolve()}")
    return VECTORS.resolve()
