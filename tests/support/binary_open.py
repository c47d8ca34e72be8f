"""Windows' ``O_BINARY`` stood in for on a POSIX system, to see that a file is opened in binary mode.

POSIX has no ``O_BINARY``: code that adds ``getattr(os, "O_BINARY", 0)`` to its open flags does nothing here.
:func:`spy_on_binary_open` gives ``os`` a stand-in bit no POSIX open flag uses and records the flags of every
``os.open``, stripping the bit again before the real open, so a test can check the bit reached the flags.
"""

from __future__ import annotations

import os

import pytest

BINARY = 1 << 30


def spy_on_binary_open(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The flags of every ``os.open`` from now on (``BINARY`` included where the code asked for it)."""
    flags_seen: list[int] = []
    real_open = os.open

    def spy(path: object, flags: int, *args: object) -> int:
        flags_seen.append(flags)
        return real_open(path, flags & ~BINARY, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "O_BINARY", BINARY, raising=False)
    monkeypatch.setattr(os, "open", spy)
    return flags_seen
