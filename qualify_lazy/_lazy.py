"""Names a package exports but loads only when first used (PEP 562 module ``__getattr__``).

A stage's package offers its whole public surface, yet ``qualify --help`` and
local mode pay only for what they touch.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_attributes(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that imports ``names[name]`` (a relative module) on first use."""
    table = dict(names)

    def __getattr__(name: str) -> Any:  # noqa: N807 - the module hook's required name
        if name in table:
            return getattr(importlib.import_module(table[name], package), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
