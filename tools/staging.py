"""A run's output written beside its destination and swapped in only when the run succeeded (standard library only).

Used by the noxfile's local chains and by tools/github_offline.py: the last good output is never removed
before a new one is complete, so a refused gate, a failed build, a kill or a full disk loses nothing.
"""

from __future__ import annotations

import shutil
from pathlib import Path


def staging_folder(out: Path) -> Path:
    """A fresh, empty staging folder beside ``out`` (hidden, git-ignored)."""
    staging = out.parent / f".{out.name}.staging"
    shutil.rmtree(staging, ignore_errors=True)
    return staging


def swap_into_place(staging: Path, out: Path) -> None:
    """Replace ``out`` with ``staging``: the earlier output is moved aside first and removed only afterwards."""
    aside = out.parent / f".{out.name}.previous"
    shutil.rmtree(aside, ignore_errors=True)
    if out.exists():
        out.rename(aside)
    try:
        staging.rename(out)
    except OSError:
        if aside.exists() and not out.exists():
            aside.rename(out)  # put the earlier output back: a failed swap loses nothing
        raise
    shutil.rmtree(aside, ignore_errors=True)
