"""The producer: one job per platform, from the source gate to a signed platform statement.

The argument parsers load eagerly (``qualify --help`` needs nothing else); everything that
validates, signs or reaches GitHub loads on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from desktop_qualify.qualify_lazy import lazy_attributes

from ._args import build_gate_parser, build_parser, build_sign_parser

if TYPE_CHECKING:
    from ._cli import main, run, run_sign
    from ._gate_cli import run_gate
    from ._pipeline import produce
    from ._progress import Progress
    from ._rebuild import Rebuilt, rebuild
    from ._result import ProduceResult
    from ._sign_run import sign_run

_LAZY = {
    "ProduceResult": "._result",
    "sign_run": "._sign_run",
    "run_sign": "._cli",
    "produce": "._pipeline",
    # qualify rebuild: the producer's build of a qualified commit, run again here.
    "Rebuilt": "._rebuild",
    "rebuild": "._rebuild",
    # Progress lines on standard error (a live line on a terminal, timestamped lines in a log).
    "Progress": "._progress",
    "main": "._cli",
    "run": "._cli",
    "run_gate": "._gate_cli",
}

__getattr__ = lazy_attributes(__name__, _LAZY)


__all__ = ["ProduceResult", "Progress", "Rebuilt", "build_gate_parser", "build_parser", "build_sign_parser", "main",
           "produce", "rebuild", "run", "run_gate", "run_sign", "sign_run"]
