"""The aggregate job: one signed statement over every verified platform statement of a run.

The argument parsers load eagerly (``qualify --help`` needs nothing else); everything that
validates, signs or reaches GitHub loads on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._args import build_parser

if TYPE_CHECKING:
    from ._aggregate import AggregateResult, aggregate
    from ._cli import main, run

_LAZY = {"AggregateResult": "._aggregate", "aggregate": "._aggregate", "main": "._cli", "run": "._cli"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["AggregateResult", "aggregate", "build_parser", "main", "run"]
