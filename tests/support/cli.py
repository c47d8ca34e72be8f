"""The `qualify` console script driven in-process, as the unit and corpus suites use it.

A conftest that imports ``qualify`` from here offers it as a fixture.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest


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
