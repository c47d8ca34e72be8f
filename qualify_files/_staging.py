"""A run's output written beside its destination and swapped in only when the run succeeded.

`qualify run` writes a whole chain (evidence, artifacts, decision, summary, VSA) into
``.<out>.staging`` beside ``--out`` and swaps it into place only once the run is QUALIFIED:
the last good output is never removed before a new one is complete, so a refused gate, a
failed build, a kill or a full disk loses nothing. tools/github_offline.py stages the same way.

Standard library only, on purpose: tools/staging.py loads this file by path for scripts that
run where the package is not installed (nox's own environment), so there is one copy of it.
Errors are the operating system's own (OSError); the caller turns them into its code.
"""

from __future__ import annotations

import shutil
from pathlib import Path


def staging_folder(out: Path) -> Path:
    """A fresh, empty staging folder's path beside ``out`` (hidden; ``.<name>.staging``), not yet created."""
    staging = out.parent / f".{out.name}.staging"
    shutil.rmtree(staging, ignore_errors=True)
    return staging


def swap_into_place(staging: Path, out: Path) -> None:
    """Replace ``out`` with ``staging``: the earlier output is moved aside first and removed only afterwards.

    Each move is a rename in one folder, so at every moment either the earlier output or the new one is at
    ``out``; a failed rename puts the earlier one back and raises the OSError.
    """
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
