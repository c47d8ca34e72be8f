"""Shared fixtures for the unit suite: drive `qualify` in-process and capture what it says."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VECTORS = REPO / ".." / "shared" / "vectors"


@dataclass(frozen=True)
class CliRun:
    status: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err


@pytest.fixture
def qualify(capsys: pytest.CaptureFixture[str]) -> Callable[[list[str]], CliRun]:
    """Run `qualify ARGS...` in-process; argparse's SystemExit becomes a status like any other."""

    from desktop_qualify import qualify_cli
    def run(argv: list[str]) -> CliRun:
        capsys.readouterr()
        try:
            status = qualify_cli.main(argv)
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 2
        captured = capsys.readouterr()
        return CliRun(status, captured.out, captured.err)

    return run


@pytest.fixture
def vectors() -> Path:
    """The shared test vectors, or a skip that says where they were looked for."""
    if not VECTORS.is_dir():
        pytest.skip(f"shared test vectors not present at {VECTORS.resolve()}")
    return VECTORS.resolve()
