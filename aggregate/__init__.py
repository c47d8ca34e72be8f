"""The aggregate job: one signed statement over every verified platform statement of a run.

The argument parsers load eagerly (``qualify --help`` needs nothing else); everything that
validates, signs or reaches GitHub loads on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from desktop_qualify.qualify_lazy import lazy_attributes

from ._args import build_parser

if TYPE_CHECKING:
    from ._aggregate import AggregateResult, aggregate
    from ._cli import main, run

_LAZY = {"AggregateResult": "._aggregate", "aggregate": "._aggregate", "main": "._cli", "run": "._cli"}

__getattr__ = lazy_attributes(__name__, _LAZY)


__all__ = ["AggregateResult", "aggregate", "build_parser", "main", "run"]
