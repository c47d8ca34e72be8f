"""The display the probe and the journey run under (docs/app-contract.md, section 8).

``display_env`` gives the environment additions for one display kind and tears
the display down when the block ends. ``none`` adds nothing: a command-line
app, or a macOS or Windows runner, which has a desktop of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from desktop_qualify.evidence_schemas import Code, DisplayKind, QualificationError


@contextmanager
def display_env(kind: DisplayKind) -> Iterator[dict[str, str]]:
    """The env additions for ``kind``; raises QualificationError(ENVIRONMENT) when it cannot be provided."""
    if kind != "none":
        raise QualificationError(Code.ENVIRONMENT, f"display kind {kind!r} is not available in this producer")
    yield {}


__all__ = ["display_env"]
