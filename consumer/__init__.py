"""The consumer: the release gate and the auditor's offline check.

The argument parsers load eagerly (``qualify --help`` needs nothing else); everything that
validates, signs or reaches GitHub loads on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._args import build_audit_parser, build_verify_parser

if TYPE_CHECKING:
    from ._cli import main, run_audit, run_verify
    from ._decide import decide

_LAZY = {"decide": "._decide", "main": "._cli", "run_audit": "._cli", "run_verify": "._cli"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["build_audit_parser", "build_verify_parser", "decide", "main", "run_audit", "run_verify"]
